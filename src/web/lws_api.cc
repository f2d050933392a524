#include "web/lws_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#ifndef UEXEC_LWS_SONAME
#error "UEXEC_LWS_SONAME: libwebsockets' soname, found by meson (src/web/lws_soname.py)"
#endif

namespace uexec::web {

namespace {

template <class Fn>
bool resolve(void* lib, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (!out) missing += std::string(missing.empty() ? "" : ", ") + name;
  return out != nullptr;
}

base::Result<const LwsApi*> load() {
  // RTLD_NOW: a missing function fails here, at the listener's start, not mid-request.
  // RTLD_LOCAL: its symbols and OpenSSL's stay out of the process's global scope; the libuv
  // event plug-in libwebsockets loads in turn names libwebsockets itself (DT_NEEDED).
  void* lib = ::dlopen(UEXEC_LWS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    return base::Error{base::Errc::kUnsupported, 0,
                       std::string("the WebSocket listener needs " UEXEC_LWS_SONAME ", which cannot be loaded: ") +
                           (why ? why : "unknown error")};
  }
  static LwsApi api;
  std::string missing;
#define UEXEC_LWS_RESOLVE(field) resolve(lib, "lws_" #field, api.field, missing)
  UEXEC_LWS_RESOLVE(add_http_common_headers);
  UEXEC_LWS_RESOLVE(adopt_socket_vhost);
  UEXEC_LWS_RESOLVE(add_http_header_by_token);
  UEXEC_LWS_RESOLVE(callback_http_dummy);
  UEXEC_LWS_RESOLVE(callback_on_writable);
  UEXEC_LWS_RESOLVE(context_destroy);
  UEXEC_LWS_RESOLVE(context_user);
  UEXEC_LWS_RESOLVE(create_context);
  UEXEC_LWS_RESOLVE(finalize_write_http_header);
  UEXEC_LWS_RESOLVE(frame_is_binary);
  UEXEC_LWS_RESOLVE(get_context);
  UEXEC_LWS_RESOLVE(get_vhost_by_name);
  UEXEC_LWS_RESOLVE(hdr_copy);
  UEXEC_LWS_RESOLVE(hdr_total_length);
  UEXEC_LWS_RESOLVE(http_transaction_completed);
  UEXEC_LWS_RESOLVE(is_final_fragment);
  UEXEC_LWS_RESOLVE(remaining_packet_payload);
  UEXEC_LWS_RESOLVE(rx_flow_control);
  UEXEC_LWS_RESOLVE(serve_http_file);
  UEXEC_LWS_RESOLVE(set_log_level);
  UEXEC_LWS_RESOLVE(set_timeout);
  UEXEC_LWS_RESOLVE(write);
#undef UEXEC_LWS_RESOLVE
  if (!missing.empty())
    return base::Error{base::Errc::kUnsupported, 0, "the WebSocket listener needs " UEXEC_LWS_SONAME " with " + missing};
  return &api;  // the library stays loaded for the process's life
}

}  // namespace

base::Result<const LwsApi*> lws_api() {
  static std::once_flag once;
  static base::Result<const LwsApi*> loaded = base::Error{base::Errc::kUnsupported, 0, "not loaded"};
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

}  // namespace uexec::web
