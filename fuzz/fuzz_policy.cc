// fuzz_policy.cc: the policy text a client controls: the `sandbox` member of process/start
// (rpc/sandbox_params: uexec's short form and Codex's shape), what policy::resolve makes of
// it, deny-read globs (policy::glob_match and the path helpers) and file URIs.
//
// The first input byte picks a mode; the rest is its text:
//   0  glob      "<pattern>\0<path>": glob_match against a memoised reference matcher with
//                the same component rule (fnmatch per component, `**` any depth); also
//                path_components and path_within on canonical paths
//   1  sandbox   a JSON `sandbox` value ("@F" stands for the fixture's path): parse_sandbox_param must answer with a Result (not
//                throw), keep every deny entry it accepted (never weaken: docs/sandbox.md §1.3,
//                §1.5), and name only absolute paths; then, when every deny glob is anchored
//                inside a private fixture tree (so no input can make it scan the host's file
//                system), resolve() runs against that fixture: sorted unique lists, canonical
//                writable roots, every deny match explained by a pattern or a plain entry,
//                and the same fingerprint twice
//   2  uri       path_from_uri/file_uri round trips; parse_sandbox_mode and parse_backend
//
// The fixture (created once per process under $TMPDIR, removed at exit) is a small
// workspace: a `.git` file pointing at a gitdir with a commondir, protected names, nested
// files, a symlink, a HOME with dotfiles. Pure policy code only: nothing is spawned.
#include <fnmatch.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_common.h"
#include "policy/glob.h"
#include "policy/profile.h"
#include "policy/sandbox_attempt.h"
#include "rpc/file_uri.h"
#include "rpc/sandbox_params.h"

namespace {

using nlohmann::json;
using uexec::fuzz::excerpt;
namespace policy = uexec::policy;

std::string g_fixture;  // canonical; "<fixture>/ws" is the cwd, "<fixture>/home" is HOME

void make_fixture() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/uexec-fuzz-policy-XXXXXX";
  std::vector<char> buf(base.begin(), base.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) std::abort();
  char real[PATH_MAX];
  if (!::realpath(buf.data(), real)) std::abort();
  g_fixture = real;
  for (const char* d : {"/ws", "/ws/.codex", "/ws/src", "/ws/secrets", "/ws/nested", "/ws/nested/x", "/ws/nested/x/y",
                        "/gitdir", "/common", "/home", "/home/.ssh", "/tmp", "/ctl"})
    ::mkdir((g_fixture + d).c_str(), 0700);
  auto write = [](const std::string& p, const char* text) { std::ofstream(p) << text; };
  write(g_fixture + "/ws/.git", "gitdir: ../gitdir\n");
  write(g_fixture + "/gitdir/commondir", "../common\n");
  write(g_fixture + "/ws/src/a.txt", "a");
  write(g_fixture + "/ws/src/b.env", "SECRET=1");
  write(g_fixture + "/ws/secrets/key.pem", "k");
  write(g_fixture + "/ws/nested/x/y/z.txt", "z");
  write(g_fixture + "/home/.ssh/id_rsa", "k");
  write(g_fixture + "/home/.netrc", "k");
  (void)::symlink("src", (g_fixture + "/ws/link").c_str());
  std::atexit([] {
    ::nftw(
        g_fixture.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16, FTW_DEPTH | FTW_PHYS);
  });
}

// ---- glob ----------------------------------------------------------------------------------

bool ref_glob(const std::vector<std::string_view>& pat, const std::vector<std::string_view>& path) {
  std::size_t P = pat.size(), S = path.size();
  std::vector<signed char> memo((P + 1) * (S + 1), -1);
  // Iterative over pi descending: m(pi, si) needs m(pi+1, *) and m(pi, si+1).
  auto at = [&](std::size_t pi, std::size_t si) -> signed char& { return memo[pi * (S + 1) + si]; };
  for (std::size_t si = 0; si <= S; ++si) at(P, si) = si == S;
  for (std::size_t pi = P; pi-- > 0;) {
    for (std::size_t si = S + 1; si-- > 0;) {
      bool v;
      if (pat[pi] == "**") {
        v = at(pi + 1, si) || (si < S && at(pi, si + 1));
      } else if (si == S) {
        v = false;
      } else {
        std::string p(pat[pi]), s(path[si]);
        v = ::fnmatch(p.c_str(), s.c_str(), 0) == 0 && at(pi + 1, si + 1);
      }
      at(pi, si) = v;
    }
  }
  return at(0, 0);
}

void fuzz_glob(std::string_view text) {
  auto nul = text.find('\0');
  std::string_view pattern = text.substr(0, nul);
  std::string_view path = nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1);
  auto pp = policy::path_components(pattern), sp = policy::path_components(path);
  for (auto* parts : {&pp, &sp}) {
    std::string joined;
    for (auto c : *parts) {
      FUZZ_CHECK("path-components", !c.empty() && c.find('/') == std::string_view::npos, "component `{}`",
                 excerpt(c));
      joined += "/" + std::string(c);
    }
  }
  // (glob_match used to backtrack over `**`, exponentially in their number:
  // regressions/fuzz_policy/glob-double-star-exponential; libFuzzer's -timeout catches a return.)
  bool got = policy::glob_match(pattern, path);
  bool want = ref_glob(pp, sp);
  FUZZ_CHECK("glob-match", got == want, "glob_match(`{}`, `{}`) = {}, reference {}", excerpt(pattern), excerpt(path),
             got, want);
  // path_within on canonical paths: component prefix.
  std::string a, b;
  for (auto c : pp) a += "/" + std::string(c);
  for (auto c : sp) b += "/" + std::string(c);
  if (a.empty()) a = "/";
  if (b.empty()) b = "/";
  bool within = policy::path_within(b, a);
  bool prefix = pp.size() <= sp.size() && std::equal(pp.begin(), pp.end(), sp.begin());
  FUZZ_CHECK("path-within", within == prefix, "path_within(`{}`, `{}`) = {}", excerpt(b), excerpt(a), within);
  FUZZ_CHECK("glob-chars", policy::has_glob_chars(pattern) == (pattern.find_first_of("*?[") != std::string_view::npos),
             "has_glob_chars(`{}`)", excerpt(pattern));
}

// ---- sandbox -------------------------------------------------------------------------------

// "/a/./b//../c" → "/a/c", as profile.cc's lexical() (docs/sandbox.md §1.6).
std::string lexical(std::string_view p) {
  std::vector<std::string_view> parts;
  for (auto c : policy::path_components(p)) {
    if (c == ".") continue;
    if (c == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(c);
  }
  std::string out;
  for (auto c : parts) out += "/" + std::string(c);
  return out.empty() ? "/" : out;
}

// Would resolve() only look inside the fixture when it expands the deny globs?
bool deny_scans_confined(const policy::PermissionProfile& p, const std::string& cwd, const std::string& home) {
  for (const auto& g : p.deny_read) {
    if (g.empty()) return false;
    std::string pat = g.rfind("~/", 0) == 0 ? home + g.substr(1) : g;
    if (pat[0] != '/') pat = cwd + "/" + pat;
    if (!policy::has_glob_chars(pat)) continue;  // a plain path: one stat
    std::string base;
    for (auto c : policy::path_components(pat)) {
      if (policy::has_glob_chars(c)) break;
      if (c == "." || c == ".." || c == "link") return false;  // the kernel would resolve these
      base += "/" + std::string(c);
    }
    if (!policy::path_within(base.empty() ? "/" : base, g_fixture)) return false;
  }
  return true;
}

bool sorted_unique(const std::vector<std::string>& v) {
  return std::adjacent_find(v.begin(), v.end(), [](const auto& a, const auto& b) { return !(a < b); }) == v.end();
}

// `path` as named through the fixture's symlink ws/link (-> ws/src), when it is under ws/src.
std::string via_link(const std::string& path) {
  const std::string src = g_fixture + "/ws/src";
  if (!policy::path_within(path, src)) return path;
  return g_fixture + "/ws/link" + path.substr(src.size());
}

bool canonical_form(const std::string& p) { return !p.empty() && p[0] == '/' && lexical(p) == p; }

// Does the input ask to deny anything? (Codex shape: restricted entries with deny/none;
// short form: a non-empty denyRead.)
bool asks_deny(const json& sb) {
  if (!sb.is_object()) return false;
  if (sb.contains("denyRead") && sb["denyRead"].is_array() && !sb["denyRead"].empty()) return true;
  if (!sb.contains("permissions") || !sb["permissions"].is_object()) return false;
  const json& perm = sb["permissions"];
  if (!perm.contains("file_system") || !perm["file_system"].is_object()) return false;
  const json& fs = perm["file_system"];
  if (!fs.contains("type") || fs["type"] != "restricted" || !fs.contains("entries") || !fs["entries"].is_array())
    return false;
  for (const auto& e : fs["entries"])
    if (e.is_object() && e.contains("access") && (e["access"] == "deny" || e["access"] == "none")) return true;
  return false;
}

void fuzz_sandbox(std::string_view raw) {
  std::string text(raw);
  for (std::size_t at; (at = text.find("@F")) != std::string::npos;) text.replace(at, 2, g_fixture);
  json sb = json::parse(text, nullptr, false);
  if (sb.is_discarded()) return;
  const std::string cwd = g_fixture + "/ws", home = g_fixture + "/home";
  uexec::base::Result<std::optional<uexec::rpc::SandboxRequest>> r = std::optional<uexec::rpc::SandboxRequest>();
  try {
    r = uexec::rpc::parse_sandbox_param(sb, cwd);
  } catch (const json::exception& e) {
    // The contract is a Result (kInvalidArgument for a malformed member). exec-server's
    // decoder catches JSON exceptions, so a client sees -32602 with nlohmann's text.
    FUZZ_CHECK("policy-throws", false, "parse_sandbox_param threw: {} on {}", e.what(), excerpt(text));
    return;
  }
  if (!r) {
    auto code = r.error().code;
    FUZZ_CHECK("policy-error-kind", code == uexec::base::Errc::kInvalidArgument || code == uexec::base::Errc::kPolicy,
               "parse_sandbox_param failed with an unexpected kind: {}", r.error().context);
    return;
  }
  if (!*r) return;  // no sandbox asked for
  const policy::PermissionProfile& p = (*r)->profile;
  // Never weakened: a deny entry the parser accepted is enforced (or the request refused).
  FUZZ_CHECK("policy-deny-kept", !asks_deny(sb) || !p.deny_read.empty(),
             "deny entries were accepted but the profile denies nothing: {}", excerpt(text, 400));
  for (const auto& w : p.writable_roots)
    FUZZ_CHECK("policy-absolute", !w.empty() && w[0] == '/', "writable root `{}` is not absolute", excerpt(w));
  const std::string& pcwd = (*r)->policy_cwd.empty() ? cwd : (*r)->policy_cwd;
  FUZZ_CHECK("policy-absolute", !pcwd.empty() && pcwd[0] == '/', "policy cwd `{}` is not absolute", excerpt(pcwd));

  // resolve(): only against the fixture, and only when no glob could walk the host.
  if (pcwd != cwd || !deny_scans_confined(p, cwd, home)) return;
  policy::PermissionProfile q = p;
  policy::ResolveInput in{cwd, {"HOME=" + home, "TMPDIR=" + g_fixture + "/tmp"}, g_fixture + "/ctl", false};
  auto res = policy::resolve(q, in);
  if (!res) {
    FUZZ_CHECK("resolve-error-kind",
               res.error().code == uexec::base::Errc::kPolicy || res.error().code == uexec::base::Errc::kInvalidArgument ||
                   res.error().code == uexec::base::Errc::kSystem,
               "resolve failed with an unexpected kind: {}", res.error().context);
    return;
  }
  const auto& rp = *res;
  for (const auto* v : {&rp.writable, &rp.read_only, &rp.stubs, &rp.deny_files, &rp.deny_dirs, &rp.hide_files})
    FUZZ_CHECK("resolve-sorted", sorted_unique(*v), "a resolved list is not sorted and unique");
  for (const auto& w : rp.writable)
    FUZZ_CHECK("resolve-canonical", canonical_form(w), "writable `{}` is not canonical", excerpt(w));
  for (const auto& d : rp.deny_patterns)
    FUZZ_CHECK("resolve-deny-absolute", !d.empty() && d[0] == '/', "deny pattern `{}` is not absolute", excerpt(d));
  FUZZ_CHECK("resolve-deny-configured", rp.deny_configured == !q.deny_read.empty(), "deny_configured is {}",
             rp.deny_configured);
  // Every masked path is explained: a glob pattern matches it, or it is a plain entry's target.
  for (const auto* v : {&rp.deny_files, &rp.deny_dirs})
    for (const auto& f : *v) {
      bool explained = false;
      for (const auto& pat : rp.deny_patterns) {
        // The mask goes on the real path; the command names it through the fixture's one
        // symlink (ws/link -> src) too, and a glob may have matched that name.
        if (policy::has_glob_chars(pat) && (policy::glob_match(pat, f) || policy::glob_match(pat, via_link(f))))
          explained = true;
        if (!policy::has_glob_chars(pat)) {
          char real[PATH_MAX];
          if (::realpath(pat.c_str(), real) && f == real) explained = true;
        }
      }
      FUZZ_CHECK("resolve-deny-explained", explained, "`{}` is masked but no deny entry names it", excerpt(f));
    }
  auto again = policy::resolve(q, in);
  FUZZ_CHECK("resolve-deterministic", again && again->fingerprint == rp.fingerprint,
             "resolving the same profile twice gave different plans");
}

// ---- uri -----------------------------------------------------------------------------------

void fuzz_uri(std::string_view text) {
  std::string s(text);
  if (auto p = uexec::rpc::path_from_uri(s))
    FUZZ_CHECK("uri-absolute", !p->empty() && (*p)[0] == '/', "path_from_uri(`{}`) = `{}`", excerpt(s), excerpt(*p));
  if (!s.empty() && s[0] == '/') {
    std::string uri = uexec::rpc::file_uri(s);
    auto back = uexec::rpc::path_from_uri(uri);
    FUZZ_CHECK("uri-roundtrip", back && *back == s, "path_from_uri(file_uri(`{}`)) = `{}`", excerpt(s),
               back ? excerpt(*back) : std::string("nullopt"));
    for (unsigned char c : uri) FUZZ_CHECK("uri-ascii", c > 0x20 && c < 0x7F, "file_uri produced byte {:#x}", c);
  }
  auto mode = policy::parse_sandbox_mode(text);
  if (mode) FUZZ_CHECK("mode-name", policy::sandbox_mode_name(*mode) == text, "mode `{}` round trip", excerpt(text));
  (void)policy::parse_backend(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: fuzz_glob(text); break;
    case 1: fuzz_sandbox(text); break;
    default: fuzz_uri(text); break;
  }
  return 0;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  uexec::fuzz::quiet_logs();
  make_fixture();
  return 0;
}
