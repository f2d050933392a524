#include "rpc/process_address.h"

#include "rpc/request_params.h"

namespace uexec::rpc {

using nlohmann::json;

ProtocolSession& addressed_session(ProcessTable& table, Connection& c, const json& params) {
  if (params.contains("sessionId") && params["sessionId"].is_string()) {
    ProtocolSession* s = table.find_session(params["sessionId"]);
    if (!s)
      throw ParamError{kInvalidRequest, "unknown session id " + params["sessionId"].get<std::string>(),
                       {{"kind", "unknownSession"}, {"sessionId", params["sessionId"]}}};
    return *s;
  }
  return *c.session();
}

ProtocolProcess* addressed_process(ProcessTable& table, Connection& c, const json& id, const json& params) {
  std::string pid = need_string(params, "processId");
  ProtocolSession& session = addressed_session(table, c, params);
  ProtocolProcess* p = table.find_process(&session, pid);
  if (!p)
    c.error(id, kInvalidRequest, "unknown process id " + pid,
            {{"kind", "unknownProcess"}, {"processId", pid}, {"reason", table.tombstone_reason(session.id + "/" + pid)}});
  return p;
}

}  // namespace uexec::rpc
