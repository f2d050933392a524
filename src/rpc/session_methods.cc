#include "rpc/session_methods.h"

#include <fmt/core.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "base/home_dir.h"
#include "policy/linux_sandbox.h"
#include "rpc/file_uri.h"
#include "rpc/process_control_methods.h"
#include "rpc/request_params.h"
#include "rpc/sha256.h"

namespace uexec::rpc {

using nlohmann::json;

namespace {

// The backends this host can run (sandbox --check's answer), for initialize.
json sandbox_backends() {
  const auto& h = policy::host_support();
  json out = json::array();
  if (h.userns && h.init) out.push_back("namespaces");
  if (h.landlock_abi >= 2) out.push_back("landlock");
  if (!h.bwrap.empty()) out.push_back("bwrap");
  return out;
}

}  // namespace

json SessionMethods::environment() const {
  passwd* pw = ::getpwuid(::getuid());
  std::string shell = pw && pw->pw_shell ? pw->pw_shell : "/bin/sh";
  // $HOME first, as Codex's exec-server and every shell the server starts see it.
  const char* home_env = std::getenv("HOME");
  std::string home = base::home_dir(home_env ? home_env : "");
  if (home.empty()) home = "/";
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const char* tmp = std::getenv("TMPDIR");
  json caps = json::object();
  for (const char* k : {"networkProxyLaunch", "networkProxyReviewDomains", "credentialMasking",
                        "credentialMaskingCustomProviders", "capabilityDiscoverySandbox", "fsWatchMissing",
                        "capabilityDiscoveryV2", "environmentConfigRead", "httpHeaderEnvVars", "sandboxedFileStreaming",
                        "fileWriteStreaming", "shellSnapshotV2", "windowsMxc", "linuxRootWritePreservesDevices",
                        "linuxApprovedRootWritePreservesRestrictions"})
    caps[k] = false;
  // What uexec serves (the file methods run where the server has a file system to offer).
  caps["environmentConfigRead"] = opts_.file_system;
  caps["fsWatchMissing"] = opts_.file_system;
  return {{"shell", {{"name", shell.substr(shell.rfind('/') + 1)}, {"path", shell}}},
          {"executorVersion", "0.169.0"},
          {"providerId", "sha256:" + sha256_hex(fmt::format("uexec:{}:{}", host, ::getuid()))},
          {"cwd", file_uri(cwd_)},
          {"userHomeDir", file_uri(home)},
          {"platformOs", "linux"},
          {"prependPathDirs", json::array()},
          {"temporaryDirectories", json::array()},
          {"tempDir", file_uri(tmp && *tmp ? tmp : "/tmp")},
          {"capabilities", caps}};
}

void SessionMethods::environment_info(Connection& c, const json& id, const json&) { c.reply(id, environment()); }

void SessionMethods::environment_status(Connection& c, const json& id, const json&) {
  c.reply(id, {{"status", "ready"},
               {"sessions", table_.sessions().size()},
               {"processes", table_.processes()},
               {"handles", pm_.loop().open_handles()}});
}

void SessionMethods::initialize(Connection& c, const json& id, const json& params) {
  if (c.initialize_replied())
    return c.error(id, kInvalidRequest, "initialize may only be sent once per connection", {{"kind", "alreadyInitialized"}});
  std::string client_name = need_string(params, "clientName");
  bool extensions = false, approvals = false;
  if (params.contains("capabilities") && params["capabilities"].is_object()) {
    const json& caps = params["capabilities"];
    if (caps.contains("extensions") && caps["extensions"].is_boolean()) extensions = caps["extensions"].get<bool>();
    if (caps.contains("approvals") && caps["approvals"].is_boolean()) approvals = caps["approvals"].get<bool>();
  }
  ProtocolSession* session = nullptr;
  bool resumed = false;
  if (params.contains("resumeSessionId") && params["resumeSessionId"].is_string()) {
    std::string rid = params["resumeSessionId"];
    session = opts_.daemon ? table_.find_session(rid) : nullptr;
    if (!session)
      return c.error(id, kInvalidRequest, "unknown session id " + rid, {{"kind", "unknownSession"}, {"sessionId", rid}});
    if (session->connection)  // Codex's code and words: its client retries on this message
      return c.error(id, kSessionBusy, "session " + rid + " is already attached to another connection",
                     {{"kind", "sessionBusy"}, {"sessionId", rid}});
    resumed = true;
  }
  auto ttl = opt_number<long>(params, "detachedTtlMs");  // read before anything changes
  if (resumed) {
    session->ttl.reset();
  } else {
    session = &table_.new_session();
  }
  c.attach(*session, client_name, extensions, approvals);
  if (ttl) {
    if (*ttl < 0 && opts_.daemon) session->keep_forever = true;
    else if (*ttl >= 0) session->ttl_ms = std::min<long>(*ttl, opts_.detached_ttl.count());
  }
  json signals = json::array();
  for (const auto& [n, s] : ProcessControlMethods::signal_names()) signals.push_back(n);
  c.reply(id, {{"sessionId", session->id},
               {"environmentInfo", environment()},
               {"serverInfo", {{"name", "uexec"}, {"version", "0.1.0"}}},
               {"capabilities",
                {{"protocol", "uexec/1"},
                 {"codexCompat", "0.169.0"},
                 {"methods", methods_ ? methods_->extension_methods() : json::array()},
                 {"signals", signals},
                 {"sandboxModes", {"read-only", "workspace-write", "danger-full-access"}},
                 {"sandboxBackends", sandbox_backends()},
                 {"maxMessageBytes", 16u << 20},
                 {"retainedBytesPerProcess", pm_.config().retain_bytes},
                 {"detachedTtlMs", opts_.daemon ? opts_.detached_ttl.count() : 0}}},
               {"resumed", resumed}});
  if (resumed)
    for (auto& [pid, p] : session->processes) pump_.push(*p);
}

}  // namespace uexec::rpc
