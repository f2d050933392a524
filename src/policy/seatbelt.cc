#include "policy/seatbelt.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <utility>

namespace uexec::policy {

using base::Errc;
using base::Error;
using base::Result;

namespace {

// Section 1. Closed by default; what every command needs no matter the profile.
constexpr std::string_view kBasePolicy = R"sb((version 1)
; uexec Seatbelt policy: nothing is allowed unless a rule allows it; the last matching rule wins.
(deny default)

; the command may start programs and fork; children keep this same policy
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
)sb";

constexpr std::string_view kAllowPs = R"sb(
; seatbelt_allow_ps: the setuid /bin/ps runs outside the sandbox (Homebrew's `brew shellenv`)
(allow process-exec (literal "/bin/ps") (with no-sandbox))
)sb";

constexpr std::string_view kBasePolicyRest = R"sb(
; /dev/null takes writes, when it is the real character device
(allow file-write-data (require-all (literal "/dev/null") (vnode-type CHARACTER-DEVICE)))

; sysctl values that runtimes query: CPU, caches, memory, OS version, limits
(allow sysctl-read
  (sysctl-name "hw.activecpu")
  (sysctl-name "hw.busfrequency_compat")
  (sysctl-name "hw.byteorder")
  (sysctl-name "hw.cacheconfig")
  (sysctl-name "hw.cachelinesize")
  (sysctl-name "hw.cachelinesize_compat")
  (sysctl-name "hw.cpufamily")
  (sysctl-name "hw.cpufrequency")
  (sysctl-name "hw.cpufrequency_compat")
  (sysctl-name "hw.cputype")
  (sysctl-name "hw.l1dcachesize")
  (sysctl-name "hw.l1dcachesize_compat")
  (sysctl-name "hw.l1icachesize")
  (sysctl-name "hw.l1icachesize_compat")
  (sysctl-name "hw.l2cachesize")
  (sysctl-name "hw.l2cachesize_compat")
  (sysctl-name "hw.l3cachesize")
  (sysctl-name "hw.l3cachesize_compat")
  (sysctl-name "hw.logicalcpu")
  (sysctl-name "hw.logicalcpu_max")
  (sysctl-name "hw.machine")
  (sysctl-name "hw.memsize")
  (sysctl-name "hw.model")
  (sysctl-name "hw.ncpu")
  (sysctl-name "hw.nperflevels")
  (sysctl-name "hw.packages")
  (sysctl-name "hw.pagesize")
  (sysctl-name "hw.pagesize_compat")
  (sysctl-name "hw.physicalcpu")
  (sysctl-name "hw.physicalcpu_max")
  (sysctl-name "hw.tbfrequency_compat")
  (sysctl-name "hw.vectorunit")
  (sysctl-name-prefix "hw.optional.arm")
  (sysctl-name-prefix "hw.perflevel")
  (sysctl-name "machdep.cpu.brand_string")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name-prefix "kern.proc.pgrp.")
  (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "vm.loadavg")
  (sysctl-name-prefix "net.routetable."))
; Java asks for the CPU type through a sysctl that the kernel counts as a write
(allow sysctl-write (sysctl-name "kern.grade_cputype"))

; power state, and user and group records (getpwuid and friends)
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.PowerManagement.control"))

; POSIX semaphores (Python multiprocessing) and the OpenMP runtime registration (libomp, PyTorch)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read-data ipc-posix-shm-write-create ipc-posix-shm-write-unlink
  (ipc-posix-name-regex #"^/__KMP_REGISTERED_LIB_[0-9]+$"))

; terminals: openpty() inside the sandbox, and ioctls on a PTY opened before it
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))
(allow file-read* file-write*
  (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))
(allow file-ioctl (regex #"^/dev/ttys[0-9]+$"))
)sb";

// Section 5, appended to a non-empty network section.
constexpr std::string_view kNetworkAppendix = R"sb(; platform services a networked program uses: AF_SYSTEM (protocol 2), DNS, TLS trust
(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd"))
(allow sysctl-read (sysctl-name-prefix "net.routetable"))
)sb";

// Section 6: only with a full read, because cfprefsd answers from files beyond any read root.
constexpr std::string_view kPreferences = R"sb(; user preferences, read-only (full read only: cfprefsd reads on our behalf)
(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))
(allow mach-lookup
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent")
  (local-name "com.apple.cfprefsd.agent"))
(allow user-preference-read)
)sb";

// Section 7: what a program needs to load and run when the read is restricted. Read-only:
// writes come from the write policy alone, so there is no /tmp grant here.
constexpr std::string_view kPlatformDefaults = R"sb(; platform defaults (restricted read): system libraries, frameworks and configuration, read-only
(allow file-read* file-test-existence
  (literal "/")
  (subpath "/usr/lib")
  (subpath "/usr/share")
  (subpath "/System/Library/Frameworks")
  (subpath "/System/Library/PrivateFrameworks")
  (subpath "/System/Library/SubFrameworks")
  (subpath "/Library/Apple/System/Library/Frameworks")
  (subpath "/Library/Apple/System/Library/PrivateFrameworks")
  (subpath "/Library/Apple/usr/lib")
  (subpath "/private/etc")
  (subpath "/private/var/db/timezone")
  (literal "/System/Library/CoreServices/SystemVersion.plist")
  (literal "/System/Library/CoreServices/.SystemVersionPlatform.plist"))
(allow file-map-executable
  (subpath "/usr/lib")
  (subpath "/System/Library/Frameworks")
  (subpath "/System/Library/PrivateFrameworks")
  (subpath "/System/Library/SubFrameworks")
  (subpath "/Library/Apple/System/Library/Frameworks")
  (subpath "/Library/Apple/System/Library/PrivateFrameworks")
  (subpath "/Library/Apple/usr/lib"))
; the /etc, /tmp and /var links, and the firmlinked parents of /private
(allow file-read-metadata
  (literal "/etc")
  (literal "/tmp")
  (literal "/var")
  (path-ancestors "/System/Volumes/Data/private"))
; programs to exec
(allow file-read* file-test-existence
  (subpath "/bin")
  (subpath "/sbin")
  (subpath "/usr/bin")
  (subpath "/usr/sbin")
  (subpath "/usr/libexec"))
; basic device nodes
(allow file-read* file-test-existence
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/random")
  (literal "/dev/urandom")
  (literal "/dev/tty")
  (subpath "/dev/fd"))
(allow file-read-metadata (literal "/dev") (regex #"^/dev/[^/]+$"))
; applications
(allow file-read* (subpath "/Applications"))
)sb";

// ---- paths ----------------------------------------------------------------------------------

// `path` is `root` or lies beneath it (every absolute path lies beneath "/").
bool is_at_or_under(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path.front() == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

bool is_strictly_under(std::string_view path, std::string_view root) {
  return path != root && is_at_or_under(path, root);
}

// "/a/b" → "/a"; "/a" → "/"; "/" → "/".
std::string parent_of(std::string_view path) {
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// `from` and each of its ancestors that lies strictly beneath `root`, shallowest first.
std::vector<std::string> ancestors_beneath(const std::string& from, std::string_view root) {
  std::vector<std::string> out;
  for (std::string d = from; is_strictly_under(d, root); d = parent_of(d)) out.push_back(d);
  std::reverse(out.begin(), out.end());
  return out;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// ---- regexes --------------------------------------------------------------------------------

bool is_regex_meta(char c) {
  switch (c) {
    case '\\': case '.': case '+': case '*': case '?': case '(': case ')': case '|':
    case '[': case ']': case '{': case '}': case '^': case '$':
      return true;
    default:
      return false;
  }
}

void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    if (is_regex_meta(c)) out.push_back('\\');
    out.push_back(c);
  }
}

// Inside #"…" a quote would end the literal.
std::string escape_quotes(std::string_view regex) {
  std::string out;
  out.reserve(regex.size() + 4);
  for (char c : regex) {
    if (c == '"') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// ^ROOT/NAME(/.*)?$, so a protected name is covered before it exists.
std::string protected_name_regex(std::string_view root, std::string_view name) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  std::string r = "^";
  if (root != "/") append_escaped(r, root);
  r += '/';
  append_escaped(r, name);
  r += "(/.*)?$";
  return escape_quotes(r);
}

// The directory a glob's matches hang from: its part before the first glob character, cut
// back to a whole directory; for a plain path, its parent.
std::string static_prefix_dir(std::string_view glob) {
  auto first = glob.find_first_of("*?[]");
  if (first == std::string_view::npos) return parent_of(glob);
  std::string_view prefix = glob.substr(0, first);
  auto slash = prefix.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return std::string(prefix.substr(0, slash));
}

// ---- the generator --------------------------------------------------------------------------

// The -D parameters in argv order; add() returns the key for the rule text.
struct Params {
  std::vector<std::string> items;
  std::string add(std::string key, const std::string& value) {
    items.push_back(key + "=" + value);
    return key;
  }
};

std::string param(std::string_view key) { return "(param \"" + std::string(key) + "\")"; }

// One root of an access rule: the subpath, and what is cut out of it.
struct Clause {
  std::string key;                        // READABLE_ROOT_i / WRITABLE_ROOT_i
  std::vector<std::string> excluded_keys;  // …_EXCLUDED_j
  std::vector<std::string> regexes;        // protected names, ready for #"…"
};

// (allow ACTION CLAUSE…): a bare subpath for a clause without cut-outs unless `require_all`.
std::string access_rule(std::string_view action, const std::vector<Clause>& clauses, bool require_all) {
  std::string s = "(allow " + std::string(action);
  for (const auto& c : clauses) {
    s += "\n  ";
    if (!require_all && c.excluded_keys.empty() && c.regexes.empty()) {
      s += "(subpath " + param(c.key) + ")";
      continue;
    }
    s += "(require-all (subpath " + param(c.key) + ")";
    for (const auto& k : c.excluded_keys) {
      s += "\n    (require-not (literal " + param(k) + "))";
      s += "\n    (require-not (subpath " + param(k) + "))";
    }
    for (const auto& r : c.regexes) s += "\n    (require-not (regex #\"" + r + "\"))";
    s += ")";
  }
  s += ")\n";
  return s;
}

struct Root {
  std::string path;
  std::vector<std::string> read_only;
  std::vector<std::string> names;
};

// Writable roots sorted by path, duplicates merged.
std::vector<Root> sorted_roots(const std::vector<SeatbeltWritableRoot>& in) {
  std::vector<Root> roots;
  for (const auto& w : in) {
    auto it = std::find_if(roots.begin(), roots.end(), [&](const Root& r) { return r.path == w.path; });
    if (it == roots.end()) it = roots.insert(roots.end(), Root{w.path, {}, {}});
    it->read_only.insert(it->read_only.end(), w.read_only.begin(), w.read_only.end());
    it->names.insert(it->names.end(), w.protected_names.begin(), w.protected_names.end());
  }
  std::sort(roots.begin(), roots.end(), [](const Root& a, const Root& b) { return a.path < b.path; });
  for (auto& r : roots) {
    sort_unique(r.read_only);
    sort_unique(r.names);
  }
  return roots;
}

// A deny entry for section 10: its regexes and the directory its matches hang from.
struct DenyEntry {
  std::string key;
  std::vector<std::string> regexes;
  std::string prefix_dir;
  bool operator<(const DenyEntry& o) const { return std::tie(key, regexes) < std::tie(o.key, o.regexes); }
  bool operator==(const DenyEntry& o) const { return key == o.key && regexes == o.regexes; }
};

std::vector<DenyEntry> deny_entries(const std::vector<std::string>& paths, const std::vector<SeatbeltDenyGlob>& globs) {
  std::vector<DenyEntry> out;
  for (const auto& p : paths) {
    if (p.empty()) continue;
    out.push_back({p, {path_to_sbpl_regex(p)}, parent_of(p)});
  }
  for (const auto& g : globs) {
    if (g.pattern.empty()) continue;
    DenyEntry e{g.pattern, {glob_to_sbpl_regex(g.pattern)}, static_prefix_dir(g.pattern)};
    if (!g.canonical.empty() && g.canonical != g.pattern) {
      std::string variant = glob_to_sbpl_regex(g.canonical);
      if (variant != e.regexes.front()) e.regexes.push_back(std::move(variant));
      e.prefix_dir = static_prefix_dir(g.canonical);  // the real path: what can be renamed
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string join_sections(const std::vector<std::string>& sections) {
  std::string text;
  for (const auto& s : sections) {
    if (s.empty()) continue;
    if (!text.empty()) text += '\n';
    text += s;
  }
  return text;
}

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The loopback port of one proxy URL, or 0 (not loopback, or not parseable).
int loopback_proxy_port(std::string_view url) {
  std::string scheme = "http";
  if (auto sep = url.find("://"); sep != std::string_view::npos) {
    scheme.clear();
    for (char c : url.substr(0, sep)) scheme.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (scheme.empty()) return 0;
    url.remove_prefix(sep + 3);
  }
  std::string_view authority = url.substr(0, url.find_first_of("/?#"));
  if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string_view host;
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return 0;
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return 0;
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (!(ascii_iequals(host, "localhost") || host == "127.0.0.1" || host == "::1")) return 0;
  if (has_port && !port.empty()) {
    if (port.size() > 5) return 0;
    int n = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return 0;
      n = n * 10 + (c - '0');
    }
    return n >= 1 && n <= 65535 ? n : 0;
  }
  if (scheme == "https") return 443;
  if (scheme.rfind("socks", 0) == 0) return 1080;
  return 80;
}

Result<void> refuse(std::string what) { return Error{Errc::kPolicy, 0, "SeatbeltPreparation: " + what}; }

// Absolute and normalised: no ".", "..", empty component, trailing "/" (except "/"), NUL.
bool is_clean_absolute(std::string_view p) {
  if (p.empty() || p.front() != '/' || p.find('\0') != std::string_view::npos) return false;
  if (p == "/") return true;
  if (p.back() == '/') return false;
  size_t i = 1;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view comp = p.substr(i, j - i);
    if (comp.empty() || comp == "." || comp == "..") return false;
    i = j + 1;
  }
  return true;
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

std::string glob_to_sbpl_regex(std::string_view g) {
  if (g.empty()) return "";
  std::string r = "^";
  bool saw_glob = false;
  for (size_t i = 0; i < g.size(); ++i) {
    char c = g[i];
    if (c == '*') {
      saw_glob = true;
      if (i + 1 < g.size() && g[i + 1] == '*') {
        ++i;
        if (i + 1 < g.size() && g[i + 1] == '/') {
          ++i;
          r += "(.*/)?";
        } else {
          r += ".*";
        }
      } else {
        r += "[^/]*";
      }
    } else if (c == '?') {
      saw_glob = true;
      r += "[^/]";
    } else if (c == '[') {
      saw_glob = true;
      // A `]` right after `[` or `[!` is a member, not the end (so `[]` is no empty class).
      size_t j = i + 1;
      if (j < g.size() && g[j] == '!') ++j;
      if (j < g.size() && g[j] == ']') ++j;
      size_t close = g.find(']', j);
      if (close == std::string_view::npos) {
        r += "\\[";  // unclosed: a literal bracket; the rest is read as usual
        continue;
      }
      std::string_view body = g.substr(i + 1, close - i - 1);
      r += '[';
      if (!body.empty() && body.front() == '!') {
        r += '^';
        body.remove_prefix(1);
      }
      for (char m : body) {
        if (m == '\\') {
          r += "\\\\";
        } else if (m == '^') {
          r += "\\^";
        } else {
          r += m;
        }
      }
      r += ']';
      i = close;
    } else if (c == ']') {
      saw_glob = true;
      r += "\\]";
    } else {
      append_escaped(r, std::string_view(&c, 1));
    }
  }
  if (!saw_glob) r += "(/.*)?";
  r += '$';
  return escape_quotes(r);
}

std::string path_to_sbpl_regex(std::string_view path) {
  if (path.empty()) return "";
  std::string r = "^";
  append_escaped(r, path == "/" ? std::string_view() : path);
  r += path == "/" ? "/.*$" : "(/.*)?$";
  return escape_quotes(r);
}

SeatbeltProxy seatbelt_proxy_from_env(const std::vector<std::string>& env) {
  SeatbeltProxy out;
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string_view name(kv.data(), eq);
    if (!ascii_iequals(name, "HTTP_PROXY") && !ascii_iequals(name, "HTTPS_PROXY") && !ascii_iequals(name, "ALL_PROXY"))
      continue;
    std::string_view value = trim(std::string_view(kv).substr(eq + 1));
    if (value.empty()) continue;
    out.configured = true;
    if (int port = loopback_proxy_port(value)) out.ports.push_back(port);
  }
  std::sort(out.ports.begin(), out.ports.end());
  out.ports.erase(std::unique(out.ports.begin(), out.ports.end()), out.ports.end());
  return out;
}

Result<void> check_seatbelt_input(const SeatbeltInput& in) {
  auto path_ok = [](const std::string& p, const char* what) -> Result<void> {
    if (!is_clean_absolute(p)) return refuse(std::string(what) + " is not an absolute, normalised path: " + p);
    return {};
  };
  for (const auto& r : in.readable_roots)
    if (auto ok = path_ok(r, "readable root"); !ok) return ok;
  for (const auto& w : in.writable) {
    if (auto ok = path_ok(w.path, "writable root"); !ok) return ok;
    for (const auto& c : w.read_only) {
      if (auto ok = path_ok(c, "read-only subpath"); !ok) return ok;
      if (!is_strictly_under(c, w.path)) return refuse("read-only subpath " + c + " is not beneath " + w.path);
    }
    for (const auto& n : w.protected_names)
      if (n.empty() || n == "." || n == ".." || n.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
        return refuse("protected name is not one path component: " + n);
  }
  for (const auto& d : in.deny_paths)
    if (auto ok = path_ok(d, "deny path"); !ok) return ok;
  for (const auto& g : in.deny_globs) {
    for (const auto* p : {&g.pattern, &g.canonical}) {
      if (p == &g.canonical && p->empty()) continue;
      if (p->empty() || p->front() != '/' || p->find('\0') != std::string::npos)
        return refuse("deny glob is not absolute: " + *p);
    }
  }
  for (const auto& s : in.allow_unix_sockets)
    if (auto ok = path_ok(s, "unix socket path"); !ok) return ok;
  for (int port : in.proxy_ports)
    if (port < 1 || port > 65535) return refuse("proxy port out of range: " + std::to_string(port));
  for (const auto* d : {&in.control_dir, &in.state_dir})
    if (!d->empty())
      if (auto ok = path_ok(*d, "uexec directory"); !ok) return ok;
  return {};
}

SeatbeltPolicy seatbelt_policy(const SeatbeltInput& in) {
  Params params;
  const bool full_write = in.full_write;
  const bool full_read = in.full_read || full_write;  // write implies read
  std::vector<std::string> deny_paths = in.deny_paths;
  sort_unique(deny_paths);
  const std::vector<Root> roots = full_write ? std::vector<Root>{} : sorted_roots(in.writable);
  const std::vector<DenyEntry> denies = deny_entries(deny_paths, in.deny_globs);
  const bool has_deny = !denies.empty();
  auto denies_beneath = [&](const std::string& root) {
    std::vector<std::string> out;
    for (const auto& d : deny_paths)
      if (is_at_or_under(d, root)) out.push_back(d);
    return out;
  };
  auto single_root_rule = [&](const char* prefix, const char* action, const std::vector<std::string>& excluded) {
    Clause c{params.add(std::string(prefix) + "_0", "/"), {}, {}};
    for (size_t j = 0; j < excluded.size(); ++j)
      c.excluded_keys.push_back(params.add(std::string(prefix) + "_0_EXCLUDED_" + std::to_string(j), excluded[j]));
    return access_rule(action, {c}, true);
  };

  // 2. Read policy.
  std::string read;
  if (full_read && deny_paths.empty()) {
    read = "; reads: the whole file system\n(allow file-read*)\n";
  } else if (full_read) {
    read = "; reads: the whole file system except the deny paths\n" +
           single_root_rule("READABLE_ROOT", "file-read*", deny_paths);
  } else {
    std::vector<std::string> readable = in.readable_roots;
    for (const auto& r : roots) readable.push_back(r.path);
    sort_unique(readable);
    std::vector<Clause> clauses;
    for (size_t i = 0; i < readable.size(); ++i) {
      std::string key = "READABLE_ROOT_" + std::to_string(i);
      Clause c{params.add(key, readable[i]), {}, {}};
      auto excluded = denies_beneath(readable[i]);
      for (size_t j = 0; j < excluded.size(); ++j)
        c.excluded_keys.push_back(params.add(key + "_EXCLUDED_" + std::to_string(j), excluded[j]));
      clauses.push_back(std::move(c));
    }
    if (!clauses.empty()) read = "; reads: only the readable roots\n" + access_rule("file-read*", clauses, false);
  }

  // 3. Write policy and 4. unlink protection, built together for the parameter order.
  std::string write;
  std::string unlink;
  if (full_write && deny_paths.empty()) {
    write = "; writes: anywhere\n(allow file-write* (regex #\"^/\"))\n";
  } else if (full_write) {
    write = "; writes: anywhere except the deny paths\n" + single_root_rule("WRITABLE_ROOT", "file-write*", deny_paths);
  } else {
    std::vector<Clause> clauses;
    for (size_t i = 0; i < roots.size(); ++i) {
      const Root& root = roots[i];
      std::string key = "WRITABLE_ROOT_" + std::to_string(i);
      Clause c{params.add(key, root.path), {}, {}};
      // Every carve-out (of any root) strictly beneath this one, and the deny paths.
      std::vector<std::string> excluded = denies_beneath(root.path);
      for (const auto& other : roots) {
        if (!is_at_or_under(other.path, root.path)) continue;
        for (const auto& ro : other.read_only)
          if (is_strictly_under(ro, root.path)) excluded.push_back(ro);
        for (const auto& n : other.names) c.regexes.push_back(protected_name_regex(other.path, n));
      }
      sort_unique(excluded);
      for (size_t j = 0; j < excluded.size(); ++j)
        c.excluded_keys.push_back(params.add(key + "_EXCLUDED_" + std::to_string(j), excluded[j]));
      unlink += "(deny file-write-unlink (literal " + param(c.key) + "))\n";
      for (size_t j = 0; j < excluded.size(); ++j) {
        auto parents = ancestors_beneath(parent_of(excluded[j]), root.path);
        for (size_t k = 0; k < parents.size(); ++k) {
          std::string pk = params.add(c.excluded_keys[j] + "_PARENT_" + std::to_string(k), parents[k]);
          unlink += "(deny file-write-unlink (literal " + param(pk) + "))\n";
        }
      }
      clauses.push_back(std::move(c));
    }
    if (!clauses.empty()) {
      write = "; writes: only inside the writable roots, minus their read-only parts\n" +
              access_rule("file-write*", clauses, true);
      unlink = "; a writable root, or a directory above a read-only part, cannot be renamed or removed\n" + unlink;
    } else {
      unlink.clear();
    }
  }

  // 5. Network.
  std::string network;
  {
    std::vector<std::string> sockets = in.allow_unix_sockets;
    sort_unique(sockets);
    std::vector<int> ports = in.proxy_ports;
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    const bool some_unix = in.allow_all_unix_sockets || !sockets.empty();
    auto unix_rules = [&]() {
      if (!some_unix) return std::string();
      std::string s = "; unix sockets\n(allow system-socket (socket-domain AF_UNIX))\n";
      if (in.allow_all_unix_sockets) {
        s += "(allow network-bind (local unix-socket))\n(allow network-outbound (remote unix-socket))\n";
        return s;
      }
      for (size_t i = 0; i < sockets.size(); ++i) {
        std::string key = params.add("UNIX_SOCKET_PATH_" + std::to_string(i), sockets[i]);
        s += "(allow network-bind (local unix-socket (subpath " + param(key) + ")))\n";
        s += "(allow network-outbound (remote unix-socket (subpath " + param(key) + ")))\n";
      }
      return s;
    };
    const bool proxy_only = !ports.empty() || in.proxy_configured || in.managed_network || (!in.network && some_unix);
    if (proxy_only) {
      if ((in.proxy_configured || in.managed_network) && ports.empty()) {
        // A proxy is required but has no usable loopback endpoint: fail closed.
      } else {
        std::vector<std::string> what;
        if (in.allow_local_binding) what.push_back("loopback traffic");
        if (!ports.empty()) what.push_back("the loopback proxy");
        if (some_unix) what.push_back(in.allow_all_unix_sockets ? "unix sockets" : "the allowed unix sockets");
        network = "; network: only ";
        for (size_t i = 0; i < what.size(); ++i)
          network += (i == 0 ? "" : i + 1 == what.size() ? " and " : ", ") + what[i];
        network += "\n";
        if (in.allow_local_binding) {
          network += "(allow network-bind (local ip \"*:*\"))\n";
          network += "(allow network-inbound (local ip \"localhost:*\"))\n";
          network += "(allow network-outbound (remote ip \"localhost:*\"))\n";
          if (!ports.empty()) network += "(allow network-outbound (remote ip \"*:53\"))\n";
        }
        for (int port : ports)
          network += "(allow network-outbound (remote ip \"localhost:" + std::to_string(port) + "\"))\n";
        network += unix_rules();
        network += kNetworkAppendix;
      }
    } else if (in.network) {
      network = "; network: unrestricted\n(allow network-outbound)\n(allow network-inbound)\n";
      network += unix_rules();
      network += kNetworkAppendix;
    }
  }

  // 6. Preferences, 7. platform defaults.
  std::string preferences = full_read ? std::string(kPreferences) : std::string();
  std::string platform = !full_read && in.include_platform_defaults ? std::string(kPlatformDefaults) : std::string();

  // 8. uexec's control and state directories.
  std::string internal;
  for (auto [key, dir] : {std::pair{"UEXEC_CONTROL_DIR", &in.control_dir}, std::pair{"UEXEC_STATE_DIR", &in.state_dir}}) {
    if (dir->empty()) continue;
    params.add(key, *dir);
    internal += "(deny file-read* file-write* (subpath " + param(key) + "))\n";
    internal += "(deny network-outbound (remote unix-socket (subpath " + param(key) + ")))\n";
  }
  if (!internal.empty())
    internal = "; uexec's control and state directories: not readable, writable or connectable\n" + internal;

  // 9. XPC.
  const std::string xpc = "; no XPC services\n(deny mach-lookup (xpc-service-name-prefix \"\"))\n";

  // 10. Deny-read.
  std::string deny;
  if (has_deny) {
    deny = "; deny entries: neither readable nor writable, and the directories above them cannot be renamed\n";
    std::vector<std::string> writable_roots;
    if (full_write) {
      writable_roots.push_back("/");
    } else {
      for (const auto& r : roots) writable_roots.push_back(r.path);
    }
    for (size_t i = 0; i < denies.size(); ++i) {
      for (const auto& r : denies[i].regexes) {
        deny += "(deny file-read* (regex #\"" + r + "\"))\n";
        deny += "(deny file-write* (regex #\"" + r + "\"))\n";
      }
      std::vector<std::string> parents;
      for (std::string d = denies[i].prefix_dir;; d = parent_of(d)) {
        bool inside = std::any_of(writable_roots.begin(), writable_roots.end(),
                                  [&](const std::string& w) { return is_strictly_under(d, w); });
        if (!inside) break;
        parents.push_back(d);
      }
      std::reverse(parents.begin(), parents.end());
      for (size_t k = 0; k < parents.size(); ++k) {
        std::string key = params.add("DENY_READ_" + std::to_string(i) + "_PARENT_" + std::to_string(k), parents[k]);
        deny += "(deny file-write-unlink (literal " + param(key) + "))\n";
      }
    }
  }

  // 11. fcntl, 12. TIOCSTI.
  const bool fs_restricted = !full_read || !full_write || has_deny;
  std::string fcntl = fs_restricted ? "; F_MAKECOMPRESSED (80) and F_TRANSFEREXTENTS (110) can change a file through a "
                                      "read-only descriptor\n(deny system-fcntl (fcntl-command 80 110))\n"
                                    : "";
  const std::string tiocsti = "; nothing may type into the terminal's input queue\n(deny file-ioctl (ioctl-command TIOCSTI))\n";

  std::string base(kBasePolicy);
  if (in.allow_ps) base += kAllowPs;
  base += kBasePolicyRest;

  SeatbeltPolicy out;
  out.text = join_sections({base, read, write, unlink, network, preferences, platform, internal, xpc, deny, fcntl, tiocsti});
  out.params = std::move(params.items);
  return out;
}

std::vector<std::string> seatbelt_argv(const SeatbeltPolicy& policy, const std::vector<std::string>& command) {
  std::vector<std::string> argv;
  argv.reserve(policy.params.size() + command.size() + 4);
  argv.push_back(kSandboxExecPath);
  argv.push_back("-p");
  argv.push_back(policy.text);
  for (const auto& p : policy.params) argv.push_back("-D" + p);
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace uexec::policy
