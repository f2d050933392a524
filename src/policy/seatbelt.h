// seatbelt.h: the macOS Seatbelt backend (MacosSeatbelt, docs/sandbox.md §4): an SBPL generator.
//
// A pure function from already-resolved, canonical inputs to a policy text plus its `-D`
// parameters; it reads no file system and runs on every platform, so Linux CI golden-tests it
// (tests/golden/seatbelt/NAME.sb and NAME.args). transform() runs
//   /usr/bin/sandbox-exec -p POLICY -DKEY=VALUE ... -- COMMAND...
// The executable path is fixed (never looked up in PATH); the policy travels in memory.
//
// Every path is a `(param "KEY")` filled by `-D`, so the text does not depend on how a path is
// spelled. Only regexes carry text inline: the protected-name regexes (escaped root) and the
// deny-read regexes (escaped glob); a `"` there becomes `\"`.
//
// Sections, in this order (§4.1; empty ones omitted, joined by one blank line; in SBPL the
// last matching rule wins, so the denials come last):
//    1 base policy            always: (deny default), process, sysctl, pty, IPC allow-list
//    2 read policy            (allow file-read*), or roots minus deny paths
//    3 write policy           (allow file-write* (regex #"^/")), or roots minus carve-outs
//    4 unlink protection      write restricted: roots and carve-out ancestors cannot be renamed
//    5 network                §4.3: proxy-only (or fail closed), full, or nothing
//    6 preferences            full read only
//    7 platform defaults      restricted read with include_platform_defaults; read-only
//    8 control and state dirs always: no read, write or unix connect beneath them
//    9 XPC                    always: (deny mach-lookup (xpc-service-name-prefix ""))
//   10 deny-read              deny entries exist: regex denials, ancestors cannot be renamed
//   11 fcntl 80 / 110         file system restricted
//   12 TIOCSTI                always
// Parameters, in argv order: READABLE_ROOT_i (each followed by _EXCLUDED_j), WRITABLE_ROOT_i
// (root, _EXCLUDED_j, _EXCLUDED_j_PARENT_k), UNIX_SOCKET_PATH_i, UEXEC_CONTROL_DIR,
// UEXEC_STATE_DIR, DENY_READ_i_PARENT_k. Indices follow sorted paths: the generator sorts and
// deduplicates every list itself, so the output does not depend on the caller's order.
//
// Choices docs/sandbox.md §4 leaves open (each one only ever narrows what is allowed):
//   - write implies read: full_write reads everything; restricted read also lists every
//     writable root;
//   - a carve-out is excluded from every writable root it lies strictly beneath, and a
//     protected name from every root at or above its own, so nested roots cannot re-open them;
//   - deny paths are exclusions of every read and write root they lie beneath (§4.2) and,
//     like deny globs, regex denials in section 10 (`^PATH(/.*)?$`, escaped, not
//     glob-translated), so a later allow (platform defaults) cannot re-open them and
//     renaming an ancestor cannot carry them out;
//   - "inside a writable root" for the DENY_READ parents means strictly beneath one; with
//     full write, beneath `/`;
//   - an empty `[]` or `[!]` in a glob is not a class: `]` right after `[` or `[!` is a
//     member (POSIX), and without a later `]` the `[` is unclosed.
// Existence does not matter here: a missing carve-out, protected name or deny path is matched
// by path text like an existing one. Symlinked roots are refused earlier, by resolve().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace uexec::policy {

inline constexpr const char* kSandboxExecPath = "/usr/bin/sandbox-exec";

struct SeatbeltWritableRoot {
  std::string path;                          // canonical, absolute; "/" allowed
  std::vector<std::string> read_only;        // carve-outs strictly beneath it, existing or not
  std::vector<std::string> protected_names;  // ".git" …: those not explicitly writable
};

struct SeatbeltDenyGlob {
  std::string pattern;    // absolute glob (relative ones are anchored by resolve())
  std::string canonical;  // the same glob with its static prefix canonicalised; "" when equal
};

struct SeatbeltInput {
  // Reads.
  bool full_read = false;
  std::vector<std::string> readable_roots;  // when !full_read; writable roots are added
  bool include_platform_defaults = false;   // :minimal; only with a restricted read
  // Writes.
  bool full_write = false;                     // danger-full-access with deny entries
  std::vector<SeatbeltWritableRoot> writable;  // when !full_write
  // Deny entries (1.3): canonical paths and globs.
  std::vector<std::string> deny_paths;
  std::vector<SeatbeltDenyGlob> deny_globs;
  // Network (§4.3).
  bool network = false;              // the profile's network: enabled or restricted
  std::vector<int> proxy_ports;      // loopback proxy ports (seatbelt_proxy_from_env)
  bool proxy_configured = false;     // some proxy variable is set, usable or not
  bool managed_network = false;      // a managed network (proxy) is enforced
  bool allow_local_binding = false;  // listen and talk on loopback (proxy-only mode)
  std::vector<std::string> allow_unix_sockets;  // allowed by subpath
  bool allow_all_unix_sockets = false;          // wins over the list
  // uexec's own directories (1.4): never readable, writable or connectable. "" = none.
  std::string control_dir;
  std::string state_dir;
  bool allow_ps = false;  // config seatbelt_allow_ps: /bin/ps runs outside the sandbox
};

struct SeatbeltPolicy {
  std::string text;                 // the SBPL for -p
  std::vector<std::string> params;  // "KEY=VALUE", in argv order (without the "-D")
};

// Proxy inputs from a request env ("NAME=value"): HTTP_PROXY, HTTPS_PROXY, ALL_PROXY in any
// case. `configured` when one is non-empty; `ports` (sorted, unique) only from loopback hosts
// (localhost, 127.0.0.1, ::1), defaulting to 443 for https, 1080 for socks*, else 80.
struct SeatbeltProxy {
  std::vector<int> ports;
  bool configured = false;
};
SeatbeltProxy seatbelt_proxy_from_env(const std::vector<std::string>& env);

// kPolicy "SeatbeltPreparation: …" when a path is not absolute and normalised (no ".", "..",
// "//", trailing "/" or NUL), a carve-out is not strictly beneath its root, a protected name
// is not one plain component, a glob is empty or relative, or a port is outside 1..65535.
[[nodiscard]] base::Result<void> check_seatbelt_input(const SeatbeltInput& in);

// Pure: the policy text and its parameters (golden-tested). Expects check_seatbelt_input().
SeatbeltPolicy seatbelt_policy(const SeatbeltInput& in);

// {"/usr/bin/sandbox-exec", "-p", TEXT, "-DKEY=VALUE"…, "--", command…}.
std::vector<std::string> seatbelt_argv(const SeatbeltPolicy& policy, const std::vector<std::string>& command);

// A glob as an anchored SBPL regex, ready for #"…" (§4.4): `*` [^/]*, `?` [^/], `**/` (.*/)?,
// other `**` .*, `[…]` kept (leading `!` → `^`, `^` → `\^`, `\` → `\\`), unclosed `[` → `\[`,
// stray `]` → `\]`, other characters regex-escaped, `"` → `\"`; no glob character:
// ^PATH(/.*)?$. "" for "".
std::string glob_to_sbpl_regex(std::string_view glob);

// A literal path as the same kind of regex: ^PATH(/.*)?$, escaped, nothing translated.
std::string path_to_sbpl_regex(std::string_view path);

}  // namespace uexec::policy
