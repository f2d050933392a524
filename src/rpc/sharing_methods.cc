#include "rpc/sharing_methods.h"

#include <fmt/core.h>

#include "rpc/process_address.h"
#include "rpc/request_params.h"

namespace uexec::rpc {

using nlohmann::json;

bool SharingMethods::may_control(Connection& c, const json& id, ProtocolProcess& p, const char* what, bool input) {
  auto it = p.viewers.find(c.session());
  if (it == p.viewers.end() || (input && it->second) || !p.owner->connection) return true;
  c.error(id, kInvalidRequest,
          fmt::format("this connection is a viewer of process {}: it may not {} it{}", p.id, what,
                      input ? " unless the owner grants input (process/grant)" : ""),
          {{"kind", "readOnly"}, {"processId", p.id}, {"action", what}});
  return false;
}

bool SharingMethods::subscribers_full(Connection& c, const json& id, ProtocolProcess& p) {
  if (p.subscribers.count(c.session()) || p.subscribers.size() < opts_.max_subscribers) return false;
  c.error(id, kInternalError,
          fmt::format("process {} has {} subscribers, the most it may have", p.id, opts_.max_subscribers),
          {{"kind", "limitReached"}, {"limit", "subscribers"}, {"max", opts_.max_subscribers}});
  return true;
}

bool SharingMethods::subscribe_at_end(Connection& c, const json& id, ProtocolProcess& p) {
  if (p.subscribers.count(c.session())) return true;
  if (subscribers_full(c, id, p)) return false;
  p.subscribers[c.session()] = SubscriberCursor::at_end(p.session);
  return true;
}

void SharingMethods::subscribe(Connection& c, const json& id, const json& params, bool on) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  ProtocolSession* me = c.session();
  if (!on) {
    p->subscribers.erase(me);
    return c.reply(id, {{"subscribed", false}});
  }
  if (subscribers_full(c, id, *p)) return;
  if (params.contains("role") && !params["role"].is_null()) {
    if (!params["role"].is_string() || (params["role"] != "viewer" && params["role"] != "owner"))
      throw invalid_param("role", "role must be \"owner\" or \"viewer\"");
    bool owner = p->owner == me;
    if (params["role"] == "owner" && !owner)
      return c.error(id, kInvalidRequest, "only the session that started process " + p->id + " is its owner",
                     {{"kind", "readOnly"}, {"processId", p->id}, {"action", "own"}});
    if (params["role"] == "viewer" && !owner) p->viewers.emplace(me, false);
  }
  if (params.contains("afterSeq") && !params["afterSeq"].is_null())
    p->subscribers[me] = SubscriberCursor::after(p->session, opt_number<std::uint64_t>(params, "afterSeq").value_or(0));
  else
    p->subscribers[me] = SubscriberCursor::at_end(p->session);
  c.reply(id, {{"subscribed", true}, {"nextSeq", p->session.next_seq()}});
  pump_.push(*p);
}

void SharingMethods::grant(Connection& c, const json& id, const json& params) {
  ProtocolProcess* p = addressed_process(table_, c, id, params);
  if (!p) return;
  std::string grantee = need_string(params, "grantee");
  auto input = opt_bool(params, "input");
  if (!input) throw invalid_param("input", "input (a boolean) is required");
  if (p->owner != c.session())
    return c.error(id, kInvalidRequest, "only the owner of process " + p->id + " can grant input",
                   {{"kind", "readOnly"}, {"processId", p->id}, {"action", "grant"}});
  for (auto& [vs, granted] : p->viewers)
    if (vs->id == grantee) {
      granted = *input;
      return c.reply(id, json::object());
    }
  c.error(id, kInvalidRequest, "session " + grantee + " is not a viewer of process " + p->id,
          {{"kind", "notViewer"}, {"processId", p->id}, {"sessionId", grantee}});
}

}  // namespace uexec::rpc
