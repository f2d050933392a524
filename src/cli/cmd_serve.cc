// cmd_serve.cc: `uexec serve`: the daemon. Sessions outlive client connections.
//
// Listens on a Unix socket (mode 0600, in a 0700 directory under $XDG_RUNTIME_DIR or
// /tmp/uexec-$UID) speaking the native protocol; the CLI clients (`uexec ls | start |
// attach | send | kill | logs`) and any Codex exec-server client talk to it there.
// It also listens on WebSocket (the same protocol, one message per text frame, plus the web
// terminal's page): loopback only unless --allow-remote, always with a fresh token written
// next to the socket, and browser origins limited to loopback plus --allow-origin entries.
// SIGTERM/SIGINT terminate every process with the usual escalation, then it exits 0 with
// nothing left running. Logs go to stderr (UEXEC_LOG sets the level).
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/log.h"
#include "base/self_exe.h"
#include "cli/commands.h"
#include "cli/daemon_autostart.h"
#include "cli/daemon_lock.h"
#include "cli/daemon_upgrade.h"
#include "cli/flags.h"
#include "cli/host.h"
#include "cli/sandbox_flags.h"
#include "cli/session_defaults.h"
#include "cli/user_config.h"
#include "cli/ws_listener_flags.h"
#include "holder/holder.h"
#include "holder/holder_wire.h"
#include "policy/control_registry.h"
#include "rpc/unix_server.h"
#if UEXEC_HAVE_LWS
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "web/ws_server.h"
#endif

namespace uexec::cli {

#if UEXEC_HAVE_LWS
namespace {

// The token an earlier run left at `path`, when it is still ours alone: a regular file of this
// user, mode 0600 or stricter, holding one token of new_token()'s shape. Otherwise nullopt
// (and a fresh token is made).
std::optional<std::string> kept_token(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char buf[128];
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0)
    n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n < 32 || n >= static_cast<ssize_t>(sizeof buf)) return std::nullopt;
  std::string token(buf, static_cast<std::size_t>(n));
  for (char c : token)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return std::nullopt;
  return token;
}

// Writes `text` to `path`, readable by this user alone.
bool write_private(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace
#endif

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

// The link a holder left for a daemon it started again (holder::kLinkEnv), taken out of the
// environment so that no session inherits the name.
base::UniqueFd holder_link_from_env() {
  const char* v = std::getenv(holder::kLinkEnv);
  if (!v) return {};
  char* end = nullptr;
  long fd = std::strtol(v, &end, 10);
  ::unsetenv(holder::kLinkEnv);
  if (end == v || *end != '\0' || fd < 3 || fd > 1 << 20 || ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC) < 0)
    return {};
  // Only a SOCK_SEQPACKET socket can be a holder's link (a stray variable naming another fd is not).
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) return {};
  return base::UniqueFd(static_cast<int>(fd));
}

// How the holder starts the daemon again: this binary's path, `serve` and the same flags, but
// for those that act once (--replace: the old daemon is gone; --new-token: keep the token).
holder::HolderOptions holder_options(const std::vector<std::string>& args) {
  holder::HolderOptions o;
  o.exe = base::self_exe();
  if (o.exe.empty()) o.exe = "/proc/self/exe";
  o.argv = {"uexec", "serve"};
  for (const auto& a : args)
    if (a != "--replace" && a != "--new-token") o.argv.push_back(a);
  return o;
}

}  // namespace

int cmd_serve(const std::vector<std::string>& args) {
  // The config file first (user_config.h); the flags below override it.
  bool wants_help = false;
  for (const auto& a : args) wants_help = wants_help || a == "--help" || a == "-h";
  std::optional<UserConfig> config = wants_help ? UserConfig{} : load_user_config_or_say("uexec serve");
  if (!config) return kExitUsage;
  std::string socket_path;  // empty: the default; for --upgrade, the clients' ($UEXEC_SOCKET)
  std::string ws = config->ws;
  SandboxFlags sandbox;
  sandbox.seed(*config);
  WsListenerFlags ws_flags;
  std::string web_root = config->web_root;
  bool web = config->web;
  Flags flags(Unmatched::kRefuse, "argument");
  flags.help();
  sandbox.declare(flags);
  ws_flags.declare(flags);
  flags.value({"--socket"}, [&](const std::string& v) {
    socket_path = v;
    return Flags::Verdict{};
  });
  flags.value({"--ws"}, [&](const std::string& v) {
    ws = v;
    return Flags::Verdict{};
  });
  flags.on({"--no-ws"}, [&] { ws.clear(); });
  flags.value({"--web-root"}, [&](const std::string& v) {
    web_root = v;
    return Flags::Verdict{};
  });
  flags.on({"--no-web"}, [&] { web = false; });
  bool replace = false;
  flags.on({"--replace"}, [&] { replace = true; });
  bool new_token = false;
  flags.on({"--new-token"}, [&] { new_token = true; });
  bool upgrade = false;
  flags.on({"--upgrade"}, [&] { upgrade = true; });
  bool use_holder = !env_is("UEXEC_HOLDER", "0");
  flags.on({"--no-holder"}, [&] { use_holder = false; });
  bool journal = config->journal;
  flags.on({"--journal"}, [&] { journal = true; });
  flags.on({"--no-journal"}, [&] { journal = false; });
  // A finished process stays listed and readable for a day by default (exec-server's 30 s
  // suits a client that reads at once, not a person who comes back to a job).
  std::optional<std::chrono::milliseconds> retain_exited = config->retain_exited;
  flags.value({"--retain-exited"}, [&](const std::string& v) -> Flags::Verdict {
    if (v == "forever") {
      retain_exited.reset();
      return {};
    }
    auto d = parse_duration(v);
    if (!d) return "--retain-exited takes a duration (30s, 10m, 24h, 7d) or forever, not " + v;
    retain_exited = *d;
    return {};
  });
  ParsedArgs parsed = flags.parse(args);
  if (parsed.help) {
    std::fputs("usage: uexec serve [--socket PATH] [--ws HOST:PORT | --no-ws] [--web-root DIR | --no-web]\n"
               "                   [--allow-origin ORIGIN]... [--allow-host HOST]... [--allow-remote]\n"
               "                   [--token-file PATH] [--sandbox MODE ...] [--replace]\n"
               "                   [--retain-exited DURATION|forever] [--new-token] [--journal | --no-journal]\n"
               "                   [--no-holder]\n"
               "       uexec serve --upgrade [--socket PATH]\n"
               "  The uexec daemon on a Unix socket (default $XDG_RUNTIME_DIR/uexec/uexec.sock or\n"
               "  /tmp/uexec-$UID/uexec.sock) and on WebSocket ws://127.0.0.1:8022 (a fresh token in\n"
               "  <socket dir>/token, or --token-file's), which also serves the web terminal at\n"
               "  http://127.0.0.1:8022/ (open the URL it prints, or `uexec url`'s: the token rides in its\n"
               "  #fragment). The token is kept across restarts, so open pages reconnect; --new-token\n"
               "  makes a fresh one (every page holding the old one is then refused).\n"
               "  --web-root: the page's directory (default $UEXEC_WEB_ROOT; else an installed uexec's\n"
               "  installed page, <datadir>/uexec/web, and a build tree's the source tree's src/web/page).\n"
               "  A WebSocket client sends the token as `Authorization: Bearer <token>` or, from a\n"
               "  browser, as the subprotocol `uexec.auth.<token>`; without it: 401, from a page of\n"
               "  another origin or under a Host name that is not ours: 403.\n",
               stdout);
    std::fputs(WsListenerFlags::kHelp, stdout);
    std::fputs("  One daemon per socket: a second `serve` on the same socket refuses (exit 1) and names\n"
               "  the running one's pid; --replace stops that one (SIGTERM, its sessions end) and takes\n"
               "  over. A WebSocket port already in use is refused the same way.\n"
               "  A finished process stays listed, readable and attachable for --retain-exited (default\n"
               "  24h; forever: until the daemon ends); at the process limit the one that finished first\n"
               "  goes. `uexec logs` on one that went says when and why.\n"
               "  --journal keeps each process's output (its first and last parts, journal_size per process,\n"
               "  journal_max in all) and how it ended on disk, in $XDG_STATE_HOME/uexec/journal (or\n"
               "  ~/.local/state/uexec/journal), hidden from every sandbox: `uexec logs` reads it for a\n"
               "  process this daemon no longer has, also after a restart or a crash. Off by default: it\n"
               "  writes everything your programs print to the disk.\n"
               "  The serve process is the sessions' holder and runs the daemon as its child: if the daemon\n"
               "  dies (a crash, kill -9 of its pid), no session ends and no terminal is hung up; the holder\n"
               "  starts it again and it takes every running process back with its pid, output the dead\n"
               "  daemon had read reported as lost. Finished processes are not kept across it (--journal\n"
               "  keeps their output). --no-holder (or UEXEC_HOLDER=0): one process; its death ends them.\n"
               "  --upgrade replaces the running daemon with the binary now on disk (with the flags it was\n"
               "  started with) and keeps every running process, its pid, output, screen and pending input;\n"
               "  clients reconnect and resume; the socket and the WebSocket port stay open throughout.\n"
               "  SIGUSR2 to the serve process does the same (a service's reload). Finished processes\n"
               "  are carried over too, with their output and exit code.\n"
               "  Stop it with SIGTERM or Ctrl-C. The default sandbox of exec/*:\n", stdout);
    std::fputs(SandboxFlags::kHelp, stdout);
    std::fputs(kConfigNote, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "uexec serve: %s\n", parsed.error.c_str());
    return kExitUsage;
  }
  if (upgrade) {
    if (socket_path.empty()) socket_path = client_socket_path();
    if (socket_path.front() != '/') socket_path = current_directory() + "/" + socket_path;
    auto done = upgrade_daemon(socket_path, std::chrono::seconds(30));
    if (!done) {
      const auto code = done.error().code;
      std::fprintf(stderr, "uexec serve --upgrade: %s\n",
                   code == base::Errc::kSystem ? done.error().message().c_str() : done.error().context.c_str());
      return code == base::Errc::kNotFound || code == base::Errc::kUnsupported ? kExitRefused : kExitInternal;
    }
    std::fprintf(stderr, "uexec serve --upgrade: the daemon (pid %d) was replaced by pid %d in %lld ms; its "
                 "processes run on (holder pid %d)\n", static_cast<int>(done->before), static_cast<int>(done->after),
                 static_cast<long long>(done->took.count()), static_cast<int>(done->holder));
    return 0;
  }
  if (socket_path.empty()) socket_path = rpc::default_socket_path();
  if (!sandbox.finish()) {
    std::fprintf(stderr, "uexec serve: %s\n", sandbox.error.c_str());
    return kExitUsage;
  }
  // The socket, its lock and the token are named absolutely (the control plane's registry
  // and every later message need that), whatever the cwd was.
  if (!socket_path.empty() && socket_path.front() != '/') socket_path = current_directory() + "/" + socket_path;
#if UEXEC_HAVE_LWS
  // The WebSocket listener's address and flags are checked before anything listens.
  web::WsOptions wo;
  if (!ws.empty()) {
    if (!split_host_port(ws, 8022, &wo.host, &wo.port)) {
      std::fprintf(stderr, "uexec serve: --ws takes HOST:PORT (e.g. 127.0.0.1:8022), not %s\n", ws.c_str());
      return kExitUsage;
    }
    // Always a token: nothing listens on TCP without one. Fresh, or from --token-file.
    if (ws_flags.token_file.empty()) wo.token = web::new_token();
    else if (!ws_flags.load_token_file(wo, "uexec serve")) return kExitUsage;
    if (!ws_flags.apply(wo, "uexec serve")) return kExitUsage;
  } else if (ws_flags.any()) {
    std::fputs("uexec serve: --allow-origin, --allow-host, --allow-remote and --token-file apply to the WebSocket "
               "listener, and --no-ws turns it off\n",
               stderr);
    return kExitUsage;
  }
#endif
  std::string url_path;  // <socket>.url, while the page is served
  HostOptions ho;
  ho.who = "uexec serve";
  ho.sandbox = &sandbox;
  ho.config = &*config;
  ho.exec_server.emplace();
  ho.exec_server->daemon = true;
  ho.exec_server->exited_retention = retain_exited;
  if (journal) ho.journal = journal::Limits{config->journal_size, config->journal_max};
  // One daemon per socket (daemon_lock.h): before the socket or the token is touched.
  if (auto r = rpc::prepare_socket_dir(rpc::socket_dir_of(socket_path)); !r) {
    std::fprintf(stderr, "uexec serve: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  // A daemon its holder started again (after a crash) finds its link in the environment; the
  // holder holds the lock. Otherwise: the lock, then (unless --no-holder) the fork into holder
  // and daemon (holder/holder.h).
  base::UniqueFd link = holder_link_from_env();
  std::optional<DaemonLock> lock;
  if (!link) {
    auto acquired = DaemonLock::acquire(socket_path, replace, std::chrono::seconds(10));
    if (!acquired) {
      const bool refused = acquired.error().code == base::Errc::kLimit;  // another daemon: on purpose
      std::fprintf(stderr, "uexec serve: %s\n",
                   refused ? acquired.error().context.c_str() : acquired.error().message().c_str());
      return refused ? kExitRefused : kExitInternal;
    }
    lock.emplace(std::move(*acquired));
    if (use_holder) {
      auto forked = holder::fork_daemon(holder_options(args));
      if (!forked) {
        std::fprintf(stderr, "uexec serve: warning: no holder (%s): a crash of this daemon ends its sessions\n",
                     forked.error().message().c_str());
      } else if (!forked->is_daemon) {
        return forked->exit_code;  // the holder, when the daemon stopped for good
      } else {
        link = std::move(forked->link);
        lock.reset();  // the holder's (a forked child holds no record lock: this closes a copy)
      }
    }
  }
  const bool held = static_cast<bool>(link);
  if (link) ho.containment_owner = ::getppid();
  auto host = Host::create(ho);
  // A daemon started for an upgrade is ready now: its holder asks the running one to hand over.
  if (link) (void)holder::send(link.get(), {{"op", "standby"}});
  if (!host) return kExitUsage;
  if (link) {
    pid_t holder_pid = ::getppid();
    auto t0 = std::chrono::steady_clock::now();
    auto taken = host->take_holder(std::move(link), [&lock, socket_path] {
      // The holder is gone: this daemon keeps its sessions and takes the lock itself.
      auto l = DaemonLock::acquire(socket_path, false, std::chrono::milliseconds{0});
      if (l) lock.emplace(std::move(*l));
      else UEXEC_LOG(kError, "the holder is gone and the socket's lock is taken: {}", l.error().message());
    });
    if (!taken) {
      std::fprintf(stderr, "uexec serve: warning: the holder (pid %d) could not be used (%s): a crash of this daemon "
                   "ends its sessions\n", holder_pid, taken.error().message().c_str());
      // Unheld, it must hold the lock itself: one daemon per socket still.
      auto acquired = DaemonLock::acquire(socket_path, false, std::chrono::milliseconds{0});
      if (!acquired) {
        std::fprintf(stderr, "uexec serve: %s\n", acquired.error().message().c_str());
        return kExitRefused;
      }
      lock.emplace(std::move(*acquired));
    }
    else if (*taken > 0)
      std::fprintf(stderr, "uexec serve: took over %zu processes from the daemon before in %lld ms (holder pid %d)\n",
                   *taken,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now() - t0).count()),
                   holder_pid);
  }
  if (auto r = host->listen_unix(socket_path); !r) {
    std::fprintf(stderr, "uexec serve: %s\n", r.error().message().c_str());
    return kExitInternal;
  }
  std::fprintf(stderr, "uexec serve: listening on unix:%s (pid %d)\n", socket_path.c_str(), ::getpid());
  // Every sandbox of this user, whoever starts it, hides what is registered here.
  policy::ControlPlane plane;
  plane.socket = socket_path;
  if (std::string root = host->journal_root(); !root.empty()) {
    plane.private_dirs.push_back(root);
    std::fprintf(stderr, "uexec serve: journaling output to %s\n", root.c_str());
  }
  // An auto-started daemon's log holds the page's URL, token included: hidden like a token.
  plane.token_files.push_back(autostart_log_path(socket_path));
  policy::ControlRegistration registration;
  bool enrolled = false;
  auto enroll = [&] {  // before the listeners are announced: a client's first sandbox sees it
    enrolled = true;
    auto r = policy::ControlRegistration::add(plane);
    if (r) registration = std::move(*r);
    else std::fprintf(stderr, "uexec serve: warning: other uexec processes' sandboxes will not hide this daemon: %s\n",
                      r.error().message().c_str());
  };
#if UEXEC_HAVE_LWS
  if (!ws.empty()) {
    // A fresh token lives next to the socket, readable by us alone; --token-file's stays where it is.
    std::string token_path = ws_flags.token_file;
    std::string default_path = rpc::socket_dir_of(socket_path) + "/token";
    if (!token_path.empty()) {
      // A token an earlier run left at the default place is not this one's: nobody should read it.
      struct stat mine {}, stale {};
      if (::stat(default_path.c_str(), &stale) == 0 && ::stat(token_path.c_str(), &mine) == 0 &&
          (stale.st_dev != mine.st_dev || stale.st_ino != mine.st_ino))
        ::unlink(default_path.c_str());
    } else {
      // The token survives restarts (open tabs and bookmarks reconnect) unless --new-token.
      token_path = default_path;
      if (auto kept = new_token ? std::nullopt : kept_token(token_path)) wo.token = *kept;
      else if (!write_private(token_path, wo.token)) {
        std::fprintf(stderr, "uexec serve: cannot write %s\n", token_path.c_str());
        return kExitInternal;
      }
      wo.token_hint = "`uexec serve` wrote it to " + token_path + " (readable by its user only).";
    }
    if (web) wo.web_root = web_root.empty() ? web::default_web_root() : web_root;
    auto port = host->listen_ws(wo);
    // An upgrade passes the listener on (Host::listen_ws). A holder that predates that drops it,
    // and the daemon before may still be closing its own: then a moment's retries.
    for (int tries = 0; !port && held && port.error().code == base::Errc::kLimit && tries < 100; ++tries) {
      ::usleep(20000);
      port = host->listen_ws(wo);
    }
    if (!port) {
      std::fprintf(stderr, "uexec serve: %s\n", port.error().context.c_str());
      return port.error().code == base::Errc::kLimit ? kExitRefused : kExitInternal;
    }
    plane.token_files.push_back(token_path);
    plane.tcp_ports.push_back(*port);
    enroll();
    std::string shown = wo.host.find(':') != std::string::npos ? "[" + wo.host + "]" : wo.host;
    std::fprintf(stderr, "uexec serve: listening on ws://%s:%d/ (token in %s)\n", shown.c_str(), *port,
                 token_path.c_str());
    warn_if_remote(wo, *port, "uexec serve");
    if (!wo.web_root.empty()) {
      std::string url = fmt::format("http://{}:{}/#token={}", shown, *port, wo.token);
      std::fprintf(stderr, "uexec serve: web terminal at %s\n", url.c_str());
      // For `uexec url`; a token file, hidden with the others. Gone when the daemon stops.
      url_path = policy::socket_url_path(socket_path);
      if (write_private(url_path, url + "\n")) plane.token_files.push_back(url_path);
      else url_path.clear();
    }
  }
#endif
  if (!enrolled) enroll();
  host->on_stopping = [&] {
    UEXEC_LOG(kWarn, "shutting down: terminating {} processes", host->server().processes());
  };
  host->run();
  if (!url_path.empty()) ::unlink(url_path.c_str());
  std::fprintf(stderr, "uexec serve: stopped\n");
  return 0;
}

}  // namespace uexec::cli
