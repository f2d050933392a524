// lws_api.h: libwebsockets, loaded with dlopen when the first WebSocket listener starts instead
// of being linked. Linked, it made every uexec process (`run`, `sandbox`, `mcp`, the sandboxed
// fs helper) load libwebsockets and OpenSSL at exec: ~176 page faults, ~6 ms of start-up on
// these VMs, for a listener only `uexec serve` and `exec-server --listen ws://` open
// (docs/benchmarks.md, F1). The listener (ws_server.cc) reaches libwebsockets only through
// lws_api(); its headers still give the types, constants and signatures at build time.
#pragma once

#include <libwebsockets.h>

#include "base/result.h"

namespace uexec::web {

// The functions of libwebsockets the listener calls, by their names without the `lws_` prefix.
struct LwsApi {
  decltype(&::lws_add_http_common_headers) add_http_common_headers;
  decltype(&::lws_adopt_socket_vhost) adopt_socket_vhost;
  decltype(&::lws_add_http_header_by_token) add_http_header_by_token;
  decltype(&::lws_callback_http_dummy) callback_http_dummy;
  decltype(&::lws_callback_on_writable) callback_on_writable;
  decltype(&::lws_context_destroy) context_destroy;
  decltype(&::lws_context_user) context_user;
  decltype(&::lws_create_context) create_context;
  decltype(&::lws_finalize_write_http_header) finalize_write_http_header;
  decltype(&::lws_frame_is_binary) frame_is_binary;
  decltype(&::lws_get_context) get_context;
  decltype(&::lws_get_vhost_by_name) get_vhost_by_name;
  decltype(&::lws_hdr_copy) hdr_copy;
  decltype(&::lws_hdr_total_length) hdr_total_length;
  decltype(&::lws_http_transaction_completed) http_transaction_completed;
  decltype(&::lws_is_final_fragment) is_final_fragment;
  decltype(&::lws_remaining_packet_payload) remaining_packet_payload;
  decltype(&::lws_rx_flow_control) rx_flow_control;
  decltype(&::lws_serve_http_file) serve_http_file;
  decltype(&::lws_set_log_level) set_log_level;
  decltype(&::lws_set_timeout) set_timeout;
  decltype(&::lws_write) write;
};

// Loads libwebsockets (the soname it had at build time) and resolves every function, once per
// process; later calls return the same table, or the same error naming the library and dlerror.
[[nodiscard]] base::Result<const LwsApi*> lws_api();

}  // namespace uexec::web
