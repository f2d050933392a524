#include "rpc/sandbox_params.h"

#include "rpc/file_uri.h"
#include "rpc/json_rpc.h"

namespace uexec::rpc {

using base::Errc;
using base::Error;
using base::Result;
using json = nlohmann::json;

namespace {

Error bad(const std::string& what) { return Error::invalid("sandbox: " + what); }

Result<std::string> path_of(const json& v, const char* field) {
  if (!v.is_string()) return bad(std::string(field) + " must be a file URI or an absolute path");
  auto p = path_from_uri(v.get<std::string>());
  if (!p) return bad(std::string(field) + " must be a file URI or an absolute path, got " + v.get<std::string>());
  return *p;
}

Result<std::optional<SandboxRequest>> short_form(const json& sb) {
  SandboxRequest r;
  if (!sb["mode"].is_string()) return bad("mode must be a string");
  auto mode = policy::parse_sandbox_mode(sb["mode"].get<std::string>());
  if (!mode) return bad(mode.error().context);
  r.profile = policy::PermissionProfile::for_mode(*mode);
  if (sb.contains("writableRoots") && !sb["writableRoots"].is_null()) {
    if (!sb["writableRoots"].is_array()) return bad("writableRoots must be an array");
    if (*mode != policy::SandboxMode::kWorkspaceWrite) return bad("writableRoots needs mode workspace-write");
    for (const auto& w : sb["writableRoots"]) {
      auto p = path_of(w, "writableRoots[]");
      if (!p) return std::move(p).error();
      r.profile.writable_roots.push_back(*p);
    }
  }
  if (sb.contains("network") && !sb["network"].is_null()) {
    if (!sb["network"].is_boolean()) return bad("network must be a boolean");
    r.profile.network = sb["network"].get<bool>();
  }
  if (sb.contains("denyRead") && !sb["denyRead"].is_null()) {
    if (!sb["denyRead"].is_array()) return bad("denyRead must be an array of globs");
    for (const auto& g : sb["denyRead"]) {
      if (!g.is_string() || g.get<std::string>().empty()) return bad("denyRead[] must be non-empty strings");
      r.profile.deny_read.push_back(g.get<std::string>());
    }
  }
  if (sb.contains("backend") && !sb["backend"].is_null()) {
    if (!sb["backend"].is_string()) return bad("backend must be a string");
    auto b = policy::parse_backend(sb["backend"].get<std::string>());
    if (!b) return bad(b.error().context);
    r.backend = *b;
  }
  return std::optional<SandboxRequest>(std::move(r));
}

Result<std::optional<SandboxRequest>> codex_shape(const json& sb, const std::string& cwd) {
  const json& perm = sb["permissions"];
  if (!perm.is_object()) return bad("permissions must be an object");
  std::string type = perm.value("type", "");
  if (type == "disabled" || type == "external") return std::optional<SandboxRequest>();
  if (type != "managed") return bad("permissions.type must be managed, disabled or external");
  SandboxRequest r;
  std::string net = perm.contains("network") && perm["network"].is_string() ? perm["network"].get<std::string>()
                                                                            : "restricted";
  if (net != "restricted" && net != "enabled") return bad("permissions.network must be restricted or enabled");

  std::string policy_cwd = cwd;
  if (sb.contains("cwd") && !sb["cwd"].is_null()) {
    auto p = path_of(sb["cwd"], "cwd");
    if (!p) return std::move(p).error();
    policy_cwd = *p;
  }
  std::vector<std::string> project_roots;
  if (sb.contains("workspaceRoots") && sb["workspaceRoots"].is_array()) {
    for (const auto& w : sb["workspaceRoots"]) {
      auto p = path_of(w, "workspaceRoots[]");
      if (!p) return std::move(p).error();
      project_roots.push_back(*p);
    }
  }
  if (project_roots.empty()) project_roots.push_back(policy_cwd);

  const json fs = perm.contains("file_system") ? perm["file_system"] : json::object();
  std::string fs_type = fs.is_object() ? fs.value("type", "unrestricted") : "";
  std::vector<std::string> deny;
  bool root_read = false, any_write = false, cwd_write = false, tmp_write = false;
  std::vector<std::string> writable, read_only;
  if (fs_type == "restricted") {
    if (!fs.contains("entries") || !fs["entries"].is_array()) return bad("file_system.entries must be an array");
    for (const auto& e : fs["entries"]) {
      if (!e.is_object() || !e.contains("path") || !e["path"].is_object()) return bad("an entry needs a path object");
      std::string access = e.value("access", "");
      if (access == "none") access = "deny";
      if (access != "read" && access != "write" && access != "deny") return bad("entry access must be read, write or deny");
      const json& path = e["path"];
      std::string ptype = path.value("type", "");
      std::vector<std::string> targets;
      if (ptype == "path") {
        auto p = path_of(path.contains("path") ? path["path"] : json(), "entry path");
        if (!p) return std::move(p).error();
        targets.push_back(*p);
      } else if (ptype == "glob_pattern") {
        if (!path.contains("pattern") || !path["pattern"].is_string()) return bad("glob_pattern needs a pattern");
        if (access != "deny") return bad("a glob_pattern entry is allowed with deny only");
        targets.push_back(path["pattern"].get<std::string>());
      } else if (ptype == "special") {
        std::string kind = path.contains("value") && path["value"].is_object() ? path["value"].value("kind", "") : "";
        if (kind == "root") {
          if (access == "read") root_read = true;
          else if (access == "write") targets.push_back("/");
          else return Error{Errc::kPolicy, 0, "PolicyNotExpressible: deny on :root"};
          if (access == "read") continue;
        } else if (kind == "current_working_directory") {
          if (access == "write") cwd_write = true;
          targets.push_back(policy_cwd);
        } else if (kind == "project_roots") {
          std::string sub = path["value"].contains("subpath") && path["value"]["subpath"].is_string()
                                ? "/" + path["value"]["subpath"].get<std::string>() : "";
          for (const auto& pr : project_roots) targets.push_back(pr + sub);
        } else if (kind == "slash_tmp" || kind == "tmpdir" || kind == "minimal") {
          // A deny must never be dropped: these have no deny-read form here, so refuse.
          if (access == "deny") return Error{Errc::kPolicy, 0, "PolicyNotExpressible: deny on :" + kind};
          if (kind == "slash_tmp" && access == "write") tmp_write = true;
          continue;  // $TMPDIR follows /tmp here; :minimal is inside :root
        } else {
          if (access == "deny") return Error{Errc::kPolicy, 0, "UnknownDenyEntry: special kind " + kind};
          continue;  // unknown read/write kinds can only narrow: ignored, as Codex does
        }
      } else {
        return bad("entry path type must be path, glob_pattern or special");
      }
      for (auto& t : targets) {
        if (access == "deny") {
          deny.push_back(t);
        } else if (access == "write") {
          any_write = true;
          if (t == policy_cwd) {
            cwd_write = true;
          } else {
            writable.push_back(t);
          }
        } else {
          read_only.push_back(t);
        }
      }
    }
    if (!root_read)
      return Error{Errc::kPolicy, 0, "PolicyNotExpressible: a restricted read set (no :root read) is not enforced yet"};
    r.profile = policy::PermissionProfile::for_mode(any_write || cwd_write || tmp_write
                                                        ? policy::SandboxMode::kWorkspaceWrite
                                                        : policy::SandboxMode::kReadOnly);
    r.profile.cwd_writable = cwd_write;
    r.profile.writable_roots = writable;
    r.profile.read_only_paths = read_only;
    r.profile.slash_tmp = tmp_write ? policy::TmpPolicy::kHost : policy::TmpPolicy::kNone;
    if (std::find(writable.begin(), writable.end(), "/") != writable.end())
      r.profile = policy::PermissionProfile::for_mode(policy::SandboxMode::kDangerFullAccess);
  } else if (fs_type == "unrestricted") {
    r.profile = policy::PermissionProfile::for_mode(policy::SandboxMode::kDangerFullAccess);
  } else {
    return bad("file_system.type must be restricted or unrestricted");
  }
  r.profile.network = net == "enabled";
  r.profile.deny_read = deny;
  r.policy_cwd = policy_cwd;
  return std::optional<SandboxRequest>(std::move(r));
}

}  // namespace

namespace {
Result<std::optional<SandboxRequest>> parse_unchecked(const json& sb, const std::string& cwd);
}  // namespace

Result<std::optional<SandboxRequest>> parse_sandbox_param(const json& sb, const std::string& cwd) {
  try {
    return parse_unchecked(sb, cwd);
  } catch (const nlohmann::json::exception& e) {  // a member of the wrong type deep inside
    return bad(std::string("a member has the wrong type (") + e.what() + ")");
  }
}

namespace {

Result<std::optional<SandboxRequest>> parse_unchecked(const json& sb, const std::string& cwd) {
  if (sb.is_null()) return std::optional<SandboxRequest>();
  if (!sb.is_object()) return bad("must be an object or null");
  bool has_mode = sb.contains("mode"), has_perm = sb.contains("permissions");
  if (has_mode && has_perm) return bad("give either mode (uexec's short form) or permissions (Codex's shape), not both");
  if (has_mode) return short_form(sb);
  if (has_perm) {
    // The short form's members mean nothing beside Codex's shape; dropping one (a denyRead above
    // all) would run the command with less protection than was asked, so they are refused.
    for (const char* m : {"denyRead", "writableRoots", "network", "backend"})
      if (sb.contains(m))
        return bad(std::string(m) + " belongs to the short form (mode); with permissions, say it in "
                   "permissions.file_system / permissions.network");
    return codex_shape(sb, cwd);
  }
  return bad("needs mode or permissions");
}

}  // namespace

ParamError sandbox_unavailable(const Error& e) {
  return {kInternalError, "sandbox unavailable: " + e.context,
          {{"kind", "sandboxUnavailable"}, {"backend", "auto"}, {"reason", e.context.substr(0, e.context.find(':'))}}};
}

std::optional<SandboxChoice> sandbox_for_request(const json& params, const std::string& cwd) {
  if (!params.contains("sandbox")) return std::nullopt;
  auto sb = parse_sandbox_param(params["sandbox"], cwd);
  if (!sb) {
    if (sb.error().code == Errc::kPolicy) throw sandbox_unavailable(sb.error());
    throw invalid_param("sandbox", sb.error().context);
  }
  if (!*sb) return std::nullopt;
  auto attempt = policy::SandboxAttempt::select((*sb)->profile, (*sb)->backend);
  if (!attempt) throw sandbox_unavailable(attempt.error());
  return SandboxChoice{std::move(*attempt), (*sb)->policy_cwd};
}

}  // namespace uexec::rpc
