#include "rpc/method_table.h"

#include <algorithm>

#include "rpc/connection.h"
#include "rpc/json_rpc.h"
#include "rpc/request_params.h"
#include "term/screen.h"

namespace uexec::rpc {

using nlohmann::json;

void MethodTable::dispatch(Connection& c, const json& id, const std::string& method, const json& params) const {
  auto it = std::find_if(methods_.begin(), methods_.end(), [&](const Method& m) { return m.name == method; });
  if (it == methods_.end())
    return c.error(id, kMethodNotFound, "method not found: " + method, {{"kind", "methodNotFound"}, {"method", method}});
  if (it->gate != Gate::kNone && !c.initialize_replied())
    return c.error(id, kInvalidRequest,
                   it->gate == Gate::kInitializedStatus ? "client must call initialize before using environment status methods"
                                                        : "client must call initialize before using exec methods",
                   {{"kind", "notInitialized"}});
  if (it->gate != Gate::kNone && !c.initialized())
    return c.error(id, kInvalidRequest, "client must send initialized before using exec methods",
                   {{"kind", "notInitialized"}});
  try {
    it->handler(c, id, params);
  } catch (const ParamError& e) {
    c.error(id, e.code, e.message, e.data);
  } catch (const json::exception& e) {
    c.error(id, kInvalidParams, std::string("invalid params: ") + e.what(), {{"kind", "invalidParams"}});
  }
}

json MethodTable::extension_methods() const {
  json out = json::array();
  for (const Method& m : methods_)
    if (m.listing == Listing::kExtension || (m.listing == Listing::kExtensionWithScreen && term::Screen::available()))
      out.push_back(m.name);
  return out;
}

}  // namespace uexec::rpc
