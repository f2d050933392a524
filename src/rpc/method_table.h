// method_table.h: the native protocol's methods (docs/protocol.md §3 and §4), by name: what each one
// needs before it runs and which handler runs it.
//
//   dispatch(name) ─► unknown: -32601 methodNotFound
//                 ─► gated and before initialize / initialized: -32600 notInitialized
//                 ─► the handler; a ParamError or a JSON exception it throws while reading its
//                    params becomes a -32602 reply here, so none leaves the rpc layer.
//
// The table also says which methods initialize advertises as uexec's extensions
// (capabilities.methods), in table order.
// Loop thread only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace uexec::rpc {

class Connection;

class MethodTable {
 public:
  using Handler = std::function<void(Connection& c, const nlohmann::json& id, const nlohmann::json& params)>;
  // What a method needs first.
  enum class Gate {
    kNone,               // initialize itself
    kInitialized,        // initialize answered and `initialized` received ("exec methods")
    kInitializedStatus,  // the same, worded for environment/status as Codex words it
  };
  // How initialize lists it.
  enum class Listing {
    kCodex,                // Codex's own: not listed
    kExtension,            // listed in capabilities.methods
    kExtensionWithScreen,  // listed when the screen model is built in (term::Screen::available)
  };
  struct Method {
    std::string name;
    Gate gate = Gate::kInitialized;
    Listing listing = Listing::kCodex;
    Handler handler;
  };

  explicit MethodTable(std::vector<Method> methods) : methods_(std::move(methods)) {}

  // Runs request `method` for `c`, or answers why it cannot run.
  void dispatch(Connection& c, const nlohmann::json& id, const std::string& method, const nlohmann::json& params) const;
  // initialize's capabilities.methods: the extensions this build serves.
  nlohmann::json extension_methods() const;

 private:
  std::vector<Method> methods_;
};

}  // namespace uexec::rpc
