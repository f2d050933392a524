// fuzz_agent_args.cc: the agent tools' argument decoding, rpc::AgentTools::call, over the
// real agent::AgentService (world.h: nothing can be spawned), plus the named keys of
// write_stdin (agent/keys).
//
// Input: byte 0 picks the tool (exec_command, write_stdin, list_sessions, kill_session,
// read_output, or a name that is none of them) and whether structuredContent is asked for;
// the rest is the `arguments` JSON text. Strict decoding is what agent_tools.h promises:
// unknown properties refused, integers also as decimal strings, `until` checked, and every
// failure an isError result worded for the model, never an exception or a crash.
//
// Checked:
//   call() knows exactly the five tool names; `done` runs exactly once, before call()
//   returns, and no call is left pending (no session can exist, so nothing waits)
//   the result is a CallToolResult: content[0] is {type:"text", text}, isError a bool, and
//   it dumps as valid UTF-8 JSON; structuredContent only on success
//   exec_command is an error (it cannot have started anything) and starts no session;
//   write_stdin, kill_session and read_output are errors (no session exists);
//   list_sessions succeeds with no rows
//   keys: every string in `keys` through canonical_key/key_bytes: a canonical name is a
//   fixed point, is listed by key_names(), and has bytes for tty and pipe sessions
#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/keys.h"
#include "fuzz/fuzz_common.h"
#include "fuzz/world.h"
#include "rpc/agent_tools.h"

namespace {

using nlohmann::json;
using uexec::fuzz::excerpt;

void check_keys(const json& args) {
  if (!args.is_object() || !args.contains("keys") || !args["keys"].is_array()) return;
  const auto& names = uexec::agent::key_names();
  for (const auto& k : args["keys"]) {
    if (!k.is_string()) continue;
    const std::string& name = k.get_ref<const std::string&>();
    std::string canon = uexec::agent::canonical_key(name);
    if (canon.empty()) {
      FUZZ_CHECK("keys-unknown", !uexec::agent::key_bytes(name, true, false), "`{}` has bytes but no canonical name",
                 excerpt(name));
      continue;
    }
    FUZZ_CHECK("keys-fixed-point", uexec::agent::canonical_key(canon) == canon, "canonical_key(`{}`) moved again",
               excerpt(canon));
    FUZZ_CHECK("keys-listed", std::find(names.begin(), names.end(), canon) != names.end(), "`{}` is not in key_names()",
               excerpt(canon));
    for (bool tty : {true, false})
      for (bool app : {true, false}) {
        auto b = uexec::agent::key_bytes(name, tty, app);
        FUZZ_CHECK("keys-bytes", b && !b->empty(), "no bytes for `{}` (tty {}, app cursor {})", excerpt(name), tty, app);
      }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace uexec;
  if (size < 1) return 0;
  static const char* const kTools[] = {"exec_command", "write_stdin", "list_sessions", "kill_session", "read_output",
                                       "exec_commands"};
  std::string tool = kTools[(data[0] & 0x7F) % 6];
  bool structured = data[0] & 0x80;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  json args = json::parse(text.begin(), text.end(), nullptr, false);
  if (args.is_discarded()) return 0;

  auto& w = fuzz::world();
  rpc::AgentTools tools(w.exec);
  int calls = 0;
  json result;
  agent::CallId cid = 12345;
  bool known = tools.call(tool, args, structured,
                          [&](json r) {
                            ++calls;
                            result = std::move(r);
                          },
                          &cid);
  bool should_know = tool != "exec_commands";
  FUZZ_CHECK("tool-known", known == should_know, "call(`{}`) returned {}", tool, known);
  if (known) {
    FUZZ_CHECK("tool-done-once", calls == 1, "`{}` called done {} times before returning", tool, calls);
    FUZZ_CHECK("tool-no-pending", cid == 0, "`{}` left call {} pending", tool, cid);
    bool shape = result.is_object() && result.contains("content") && result["content"].is_array() &&
                 !result["content"].empty() && result["content"][0].is_object() &&
                 result["content"][0].contains("type") && result["content"][0]["type"] == "text" &&
                 result["content"][0].contains("text") && result["content"][0]["text"].is_string() &&
                 result.contains("isError") && result["isError"].is_boolean();
    FUZZ_CHECK("tool-result-shape", shape, "`{}` result is not a CallToolResult: {}", tool,
               excerpt(result.dump(-1, ' ', false, json::error_handler_t::replace)));
    std::string dumped = result.dump(-1, ' ', false, json::error_handler_t::replace);
    FUZZ_CHECK("tool-result-utf8", fuzz::valid_utf8(dumped), "`{}` result does not dump as UTF-8", tool);
    bool is_error = result["isError"].get<bool>();
    if (tool == "list_sessions") {
      FUZZ_CHECK("tool-list", is_error || !result.contains("structuredContent") ||
                                  result["structuredContent"]["sessions"].empty(),
                 "list_sessions shows sessions that cannot exist: {}", excerpt(dumped));
    } else {
      FUZZ_CHECK("tool-error", is_error, "`{}` succeeded, but no session exists and none can start: {} -> {}", tool,
                 excerpt(text, 200), excerpt(dumped, 300));
    }
    if (is_error)
      FUZZ_CHECK("tool-error-plain", !result.contains("structuredContent"), "an isError result carries structuredContent");
  }
  check_keys(args);
  w.settle();
  FUZZ_CHECK("no-spawn", w.pm.size() == 0, "{} sessions exist after the input", w.pm.size());
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  return 0;
}
