#include "rpc/connection.h"

#include "base/log.h"
#include "rpc/exec_server.h"
#include "rpc/json_rpc.h"
#include "rpc/missing_watch.h"

namespace uexec::rpc {

using nlohmann::json;

Connection::~Connection() {
  *alive_ = false;
  server_.pm_.freed(session::ProcessManager::kSessionOverheadBytes + (peer_.queued ? peer_.queued() : 0));
  auto pending = std::move(exec_calls_);
  for (auto cid : pending) server_.exec_methods_.cancel(cid);
  if (session_) server_.table_.detach(*session_);
}

void Connection::attach(ProtocolSession& session, std::string client_name, bool extensions, bool approvals) {
  session_ = &session;
  client_name_ = std::move(client_name);
  extensions_ = extensions;
  approvals_ = approvals;
  session.connection = this;
  session.client_name = client_name_;
}

bool Connection::writable() const { return !peer_.queued || peer_.queued() < server_.opts_.high_watermark; }

// Above the high watermark (docs/protocol.md §7): stop reading this connection's requests, which
// bounds the replies it can queue, and close it if it stays there for stallTimeoutMs. Below
// the low watermark: read again, and resume the pushes that paused.
void Connection::resume_when_drained() {
  if (waiting_for_drain_ || !peer_.when_below) return;
  waiting_for_drain_ = true;
  if (peer_.set_reading) peer_.set_reading(false);
  const ExecServerOptions& opts = server_.opts_;
  if (peer_.close && opts.stall_timeout.count() > 0) {
    if (!stall_) stall_ = std::make_unique<loop::Timer>(server_.pm_.loop());
    stall_->start(opts.stall_timeout, [this] {
      UEXEC_LOG(kWarn, "closing a connection ({}) above the high watermark for {} ms (stallTimeoutMs), {} bytes queued",
                client_name_, server_.opts_.stall_timeout.count(), peer_.queued ? peer_.queued() : 0);
      auto close = peer_.close;
      close();  // may destroy this connection
    });
  }
  peer_.when_below(opts.low_watermark, [this] {
    waiting_for_drain_ = false;
    if (stall_) stall_->stop();
    if (peer_.set_reading) peer_.set_reading(true);
    if (session_) server_.pump_.on_drained(*session_);
  });
}

void Connection::out(std::string line) {
  peer_.send(std::move(line));
  if (!waiting_for_drain_ && !writable()) resume_when_drained();
}

void Connection::reply(const json& id, json result) { out(encode_result(id, std::move(result))); }

void Connection::error(const json& id, int code, const std::string& message, json data) {
  out(encode_error(id, code, message, std::move(data)));
}

void Connection::notify(const std::string& method, json params) { out(encode_notification(method, std::move(params))); }

void Connection::send_raw(std::string line) { out(std::move(line)); }

void Connection::handle_oversize(std::size_t limit) { out(encode_invalid(oversize_message(limit, kNativeDialect))); }

void Connection::handle_line(std::string_view line) {
  JsonRpcMessage m = decode_json_rpc_line(line, kNativeDialect);
  switch (m.kind) {
    case JsonRpcMessage::kInvalid: return out(encode_invalid(m));
    case JsonRpcMessage::kResponse:  // to our approval/request
      if (session_) ApprovalBroker::on_response(*session_, m.response);
      return;
    case JsonRpcMessage::kNotification:
      if (m.method == "initialized") {
        if (initialize_replied()) initialized_ = true;
      } else {
        UEXEC_LOG(kInfo, "ignoring notification {}", m.method);
      }
      return;
    case JsonRpcMessage::kRequest: return server_.methods_.dispatch(*this, m.id, m.method, m.params);
  }
}

}  // namespace uexec::rpc
