// cmd_run.cc: `uexec run` (and `uexec demo`): one command through the ProcessManager,
// its output streamed to our stdout/stderr as it arrives, its exit code passed through.
//
// Output is written to our stdout with blocking writes, on purpose: `uexec run` is a
// pipeline stage, and when our reader is slow the child should slow down too (as under
// cat), rather than have its output dropped from the ring. EPIPE on stdout ends the
// command, as SIGPIPE would end it in a shell pipeline.
//
// With --tty and a terminal on stdin, the terminal goes to raw mode (restored on every
// exit path: the guard's destructor, and SIGTERM/SIGHUP/SIGINT end the command and return
// through it) and keystrokes and window sizes are forwarded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/session_defaults.h"
#include "loop/loop.h"
#include "loop/signal_watcher.h"
#include "loop/timer.h"
#include "loop/uv_handle.h"
#include "policy/control_registry.h"
#include "policy/linux_sandbox.h"
#include "policy/orchestrator.h"
#include "policy/sandbox_attempt.h"
#include "policy/seatbelt_input.h"
#include "pty/pty_pair.h"
#include "rpc/unix_server.h"
#include "session/process_manager.h"

namespace uexec::cli {
namespace {

using session::Session;

constexpr const char* kRunUsage =
    "usage: uexec run [--tty] [--cwd DIR] [--env NAME=VALUE]... [--size ROWSxCOLS]\n"
    "                 [--sandbox MODE] [SANDBOX OPTIONS] -- CMD [ARG...]\n"
    "  --sandbox MODE        read-only | workspace-write | danger-full-access (default: none)\n"
    "  SANDBOX OPTIONS       as for `uexec sandbox --help`\n";

constexpr const char* kSandboxUsage =
    "usage: uexec sandbox [--mode MODE] [--writable DIR]... [--deny-read GLOB]... [--network on|off]\n"
    "                     [--backend auto|namespaces|landlock|bwrap|seatbelt] [--private-tmp] [--log-denials]\n"
    "                     [--cwd DIR] [--env NAME=VALUE]... -- CMD [ARG...]\n"
    "       uexec sandbox --backend seatbelt --print [OPTIONS] -- CMD [ARG...]\n"
    "       uexec sandbox --check\n"
    "Runs CMD under a sandbox policy on this terminal and passes its exit code through.\n"
    "  --mode MODE           read-only | workspace-write (default) | danger-full-access\n"
    "  --writable DIR        another writable root besides the working directory\n"
    "  --deny-read GLOB      never readable ('**' spans directories; relative to the cwd)\n"
    "  --network on|off      default off (danger-full-access: on)\n"
    "  --backend B           auto picks namespaces when user namespaces work, else landlock;\n"
    "                        seatbelt is macOS's (here: only with --print)\n"
    "  --private-tmp         a private /tmp instead of the host's\n"
    "  --log-denials         print what the sandbox denied: seccomp calls, the writes its policy\n"
    "                        forbids and the reads of what it hides, with their paths (best effort)\n"
    "  --approval POLICY     never (default) | on-failure (offer one retry without the sandbox\n"
    "                        after a denial) | untrusted (also ask before commands not known\n"
    "                        to be read-only) | on-request; asked on /dev/tty, denied without one\n"
    "  --check               print what this host supports and exit\n"
    "  --print               with --backend seatbelt: print, on any host, the shell command\n"
    "                        (/usr/bin/sandbox-exec -p POLICY -DKEY=VALUE... -- CMD) that these\n"
    "                        flags run on macOS, policy text included, instead of running CMD\n"
    "Exit: the command's code (128+N for signal N); 125 when the sandbox cannot be set up.\n";

// Puts a terminal in raw mode for its lifetime.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(fd, TCSADRAIN, &raw) == 0) active_ = true;
  }
  ~RawMode() {
    if (active_) ::tcsetattr(fd_, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

struct Options {
  bool tty = false;
  bool tty_auto = false;             // uexec sandbox: a tty when stdin is one
  std::optional<policy::SandboxMode> mode;
  policy::Backend backend = policy::Backend::kAuto;
  std::vector<std::string> writable;
  std::vector<std::string> deny_read;
  std::optional<bool> network;
  bool private_tmp = false;
  bool log_denials = false;
  bool check = false;
  bool print = false;  // --print: show the seatbelt policy instead of running
  policy::ApprovalPolicy approval = policy::ApprovalPolicy::kNever;
  std::string cwd;
  std::vector<std::string> env_overrides;
  std::optional<base::PtySize> size;
  std::vector<std::string> argv;
};

std::optional<base::PtySize> parse_size(const std::string& s) {
  unsigned rows = 0, cols = 0;
  char x = 0;
  if (std::sscanf(s.c_str(), "%u%c%u", &rows, &x, &cols) != 3 || x != 'x' || rows == 0 || cols == 0 ||
      rows > 1000 || cols > 1000)
    return std::nullopt;
  return base::PtySize{static_cast<unsigned short>(rows), static_cast<unsigned short>(cols)};
}

// Reads `args` into `o`: help, an error text, or the command line in o.argv.
ParsedArgs parse(const std::vector<std::string>& args, Options& o) {
  Flags flags(Unmatched::kEndsFlagsUnlessDashed);  // the command starts at its first word (`--` is optional)
  flags.double_dash_ends_flags().help();
  auto needs_value = [](const char* flag) { return [flag] { return std::string(flag) + " needs a value"; }; };
  flags.on({"--tty", "-t"}, [&] { o.tty = true; });
  flags.on({"--log-denials"}, [&] { o.log_denials = true; });
  flags.on({"--private-tmp"}, [&] { o.private_tmp = true; });
  flags.on({"--check"}, [&] { o.check = true; });
  flags.on({"--print"}, [&] { o.print = true; });
  auto take_mode = [&](const std::string& v) -> Flags::Verdict {
    auto m = policy::parse_sandbox_mode(v);
    if (!m) return m.error().context;
    o.mode = *m;
    return {};
  };
  flags.value({"--sandbox"}, take_mode, needs_value("--sandbox"));
  flags.value({"--mode"}, take_mode, needs_value("--mode"));
  flags.value({"--writable"}, [&](const std::string& v) -> Flags::Verdict {
    o.writable.push_back(v);
    return {};
  }, needs_value("--writable"));
  flags.value({"--deny-read"}, [&](const std::string& v) -> Flags::Verdict {
    if (v.empty()) return "--deny-read needs a glob";
    o.deny_read.push_back(v);
    return {};
  }, needs_value("--deny-read"));
  flags.value({"--network"}, [&](const std::string& v) -> Flags::Verdict {
    if (v != "on" && v != "off") return "--network needs on or off, got '" + v + "'";
    o.network = v == "on";
    return {};
  }, needs_value("--network"));
  flags.value({"--backend"}, [&](const std::string& v) -> Flags::Verdict {
    auto b = policy::parse_backend(v);
    if (!b) return b.error().context;
    o.backend = *b;
    return {};
  }, needs_value("--backend"));
  flags.value({"--approval"}, [&](const std::string& v) -> Flags::Verdict {
    auto p = policy::parse_approval_policy(v);
    if (!p) return p.error().context;
    o.approval = *p;
    return {};
  }, needs_value("--approval"));
  flags.value({"--cwd"}, [&](const std::string& v) -> Flags::Verdict {
    o.cwd = v;
    return {};
  }, needs_value("--cwd"));
  flags.value({"--env"}, [&](const std::string& v) -> Flags::Verdict {
    if (v.find('=') == std::string::npos || v.front() == '=') return "--env needs NAME=VALUE, got '" + v + "'";
    o.env_overrides.push_back(v);
    return {};
  }, needs_value("--env"));
  flags.value({"--size"}, [&](const std::string& v) -> Flags::Verdict {
    o.size = parse_size(v);
    if (!o.size) return "--size needs ROWSxCOLS (1-1000 each), got '" + v + "'";
    return {};
  }, needs_value("--size"));
  ParsedArgs parsed = flags.parse(args);
  if (!parsed.ok()) return parsed;
  o.argv = std::move(parsed.rest);
  if (o.argv.empty() && !o.check) parsed.error = "no command given";
  else if (o.print && o.backend != policy::Backend::kSeatbelt)
    parsed.error = "--print shows the seatbelt backend's policy: give --backend seatbelt";
  else if (!o.mode && (!o.writable.empty() || !o.deny_read.empty() || o.network || o.private_tmp ||
                       o.backend != policy::Backend::kAuto || o.approval != policy::ApprovalPolicy::kNever))
    parsed.error = "sandbox options need --sandbox MODE";
  return parsed;
}

std::vector<std::string> build_env(const std::vector<std::string>& overrides) {
  std::vector<std::string> env = process_environment();
  for (const auto& kv : overrides) {
    std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.compare(0, name.size(), name) == 0; });
    env.push_back(kv);
  }
  return env;
}

// Blocking write of everything; false on EPIPE or another hard error.
bool write_all(int fd, const std::byte* data, std::size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n > 0) {
      data += n;
      len -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // our stdout was handed to us non-blocking
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
  return true;
}

class Runner {
 public:
  Runner(loop::Loop& loop, session::ProcessManager& pm, bool tty, bool stdin_is_tty)
      : loop_(loop), pm_(pm), tty_(tty), stdin_is_tty_(stdin_is_tty), pump_(loop), watchers_() {}

  int run(const policy::ExecRequest& req, const policy::SandboxAttempt& attempt, bool log_denials) {
    auto id = pm_.start(req, attempt);
    if (!id) {
      const auto& err = id.error();
      spawn_failed = true;
      std::fprintf(stderr, "uexec: cannot run '%s': %s\n", req.argv[0].c_str(), err.message().c_str());
      return exit_code_for_spawn_error(err);
    }
    session_ = pm_.find(*id);
    sub_ = session_->output().subscribe([this] { drain_output(); });
    pm_.on_closed = [this](Session&) { finish(); };
    watch_signals();
    watch_stdin();
    if (!session_->finished()) loop_.run();
    const auto& v = session_->verdict();
    if (const auto& by = session_->ended_by()) std::fprintf(stderr, "uexec: the session was ended: %s\n", by->message.c_str());
    if (log_denials && v) {
      // Every record the sandbox itself made (also when the command coped and exited 0).
      if (const auto* log = session_->denial_log())
        for (const auto& r : log->records)
          std::fprintf(stderr, "uexec: %s denied %s (%s)\n", r.source.c_str(), base::terminal_text(r.detail).c_str(),
                       r.kind.c_str());
      if (v->denial) {
        std::fprintf(stderr, "uexec: sandbox (%s) denied: %s\n", policy::sandbox_kind_name(attempt.kind()),
                     base::terminal_text(v->denial->describe()).c_str());
      } else if (attempt.sandboxed() && v->status.shell_code() != 0) {
        std::fprintf(stderr, "uexec: the command failed (%s); no sign of a sandbox denial\n",
                     v->status.describe().c_str());
      }
    }
    if (v && v->denial) denial = v->denial;
    return v ? v->status.shell_code() : kExitInternal;
  }

  bool spawn_failed = false;                      // run() could not start the command
  std::optional<policy::SandboxDenied> denial;    // the verdict's, when it was denied

 private:
  void drain_output() {
    for (;;) {
      auto r = session_->output().read_from(cursor_, 256 * 1024);
      if (r.gap > 0 && !discard_)
        std::fprintf(stderr, "\r\nuexec: %llu bytes of output were dropped\r\n",
                     static_cast<unsigned long long>(r.gap));
      for (const auto& p : r.pieces) {
        if (discard_) break;
        int fd = p.stream == pty::Stream::kStderr ? 2 : 1;
        if (!write_all(fd, p.bytes.data(), p.bytes.size())) {
          // Our reader went away: like SIGPIPE in a pipeline, end the command.
          discard_ = true;
          session_->terminate();
        }
      }
      if (r.next == cursor_) break;
      cursor_ = r.next;
    }
  }

  void watch_signals() {
    for (int sig : {SIGTERM, SIGHUP, SIGINT, SIGQUIT}) {
      auto w = std::make_unique<loop::SignalWatcher>(loop_);
      if (w->start(sig, [this](int) { session_->terminate(); })) watchers_.push_back(std::move(w));
    }
    if (tty_ && stdin_is_tty_) {
      auto w = std::make_unique<loop::SignalWatcher>(loop_);
      if (w->start(SIGWINCH, [this](int) {
            if (auto sz = pty::get_size(0)) (void)session_->resize(*sz);
          }))
        watchers_.push_back(std::move(w));
    }
  }

  void watch_stdin() {
    auto poll = loop::make_handle<uv_poll_t>([&](uv_poll_t* p) { return uv_poll_init(loop_.get(), p, 0); },
                                             "uv_poll_init stdin");
    if (poll) {
      stdin_poll_ = std::move(poll).value();
      stdin_poll_.get()->data = this;
      uv_poll_start(stdin_poll_.get(), UV_READABLE, &Runner::on_stdin);
    } else {
      // A regular file (epoll refuses those): pump it from a timer instead.
      pump_.start(std::chrono::milliseconds{0}, [this] { pump_stdin(); }, std::chrono::milliseconds{1});
    }
  }

  static void on_stdin(uv_poll_t* h, int /*status*/, int /*events*/) noexcept {
    if (auto* self = static_cast<Runner*>(h->data)) self->pump_stdin();
  }

  // One read per call: our stdin may be a blocking fd.
  void pump_stdin() {
    auto* proc = session_->process();
    if (proc && proc->queued_input() > 256 * 1024) {
      // The child reads slowly: stop reading until its queue drains.
      if (stdin_poll_) uv_poll_stop(stdin_poll_.get());
      pump_.start(std::chrono::milliseconds{5}, [this] { resume_stdin(); });
      return;
    }
    std::span<std::byte> buf = loop_.read_slab();
    ssize_t n = ::read(0, buf.data(), buf.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) return stdin_eof();
    if (!session_->write(buf.first(static_cast<std::size_t>(n)))) stdin_eof();
  }

  void resume_stdin() {
    auto* proc = session_->process();
    if (proc && proc->queued_input() > 64 * 1024) {
      pump_.start(std::chrono::milliseconds{5}, [this] { resume_stdin(); });
    } else if (stdin_poll_) {
      uv_poll_start(stdin_poll_.get(), UV_READABLE, &Runner::on_stdin);
    } else {
      pump_.start(std::chrono::milliseconds{0}, [this] { pump_stdin(); }, std::chrono::milliseconds{1});
    }
  }

  void stdin_eof() {
    stdin_poll_.close();
    pump_.stop();
    if (tty_) {
      // A PTY has no separate stdin to close: VEOF (ctrl-d) at a line start is its EOF.
      if (!stdin_is_tty_) (void)session_->write(std::string_view("\x04"));
    } else {
      (void)session_->close_stdin();
    }
  }

  void finish() {
    drain_output();
    stdin_poll_.close();
    pump_.stop();
    watchers_.clear();
    loop_.stop();
  }

  loop::Loop& loop_;
  session::ProcessManager& pm_;
  bool tty_;
  bool stdin_is_tty_;
  Session* session_ = nullptr;
  std::unique_ptr<session::Subscription> sub_;
  session::Offset cursor_ = 0;
  bool discard_ = false;
  loop::UvHandle<uv_poll_t> stdin_poll_;
  loop::Timer pump_;
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers_;
};

struct RunOutcome {
  int code = 0;
  bool spawn_failed = false;
  std::optional<policy::SandboxDenied> denial;
};

RunOutcome run_attempt(policy::ExecRequest req, const policy::SandboxAttempt& attempt, bool log_denials);

int run_request(policy::ExecRequest req, const policy::SandboxAttempt& attempt, bool log_denials) {
  return run_attempt(std::move(req), attempt, log_denials).code;
}

RunOutcome run_attempt(policy::ExecRequest req, const policy::SandboxAttempt& attempt, bool log_denials) {
  bool stdin_is_tty = ::isatty(0) == 1;
  // uv_poll_init makes fd 0 non-blocking, and the open file is shared with our parent
  // shell: put its flags back when we are done.
  int stdin_flags = ::fcntl(0, F_GETFL);
  std::optional<RawMode> raw;
  if (req.tty && stdin_is_tty) raw.emplace(0);
  RunOutcome out;
  {
    loop::Loop loop;
    base::Config cfg;
    (void)containment_from_env(cfg, "uexec run");  // a bad value is reported; auto is used
    session::ProcessManager pm(loop, cfg);
    Runner runner(loop, pm, req.tty, stdin_is_tty);
    policy::SandboxAttempt recorded = attempt;
    recorded.record_files(log_denials);  // the filesystem denials too, with their paths
    out.code = runner.run(req, recorded, log_denials);
    out.spawn_failed = runner.spawn_failed;
    out.denial = runner.denial;
  }
  if (stdin_flags >= 0) ::fcntl(0, F_SETFL, stdin_flags);
  return out;
}


// `--backend seatbelt --print`: the policy resolved here, as the command macOS would run.
int print_seatbelt(const policy::PermissionProfile& profile, const policy::ExecRequest& req) {
  std::string cwd = req.cwd.empty() ? current_directory() : req.cwd;
  const std::vector<std::string> env = req.env.value_or(process_environment());
  auto resolved = policy::resolve(profile, policy::ResolveInput{cwd, env, {}, true});
  if (!resolved) {
    std::fprintf(stderr, "uexec sandbox: %s\n", resolved.error().message().c_str());
    return kExitInternal;
  }
  std::string registry = policy::control_registry_dir();
  std::string state_dir = registry.substr(0, registry.rfind('/'));  // ~/.local/state/uexec
  auto in = policy::seatbelt_input(profile, *resolved, env, rpc::socket_dir_of(rpc::default_socket_path()),
                                   state_dir);
  if (!in) {
    std::fprintf(stderr, "uexec sandbox: %s\n", in.error().message().c_str());
    return kExitInternal;
  }
  auto argv = policy::seatbelt_argv(policy::seatbelt_policy(*in), req.argv);
  std::printf("#!/bin/sh\n# uexec sandbox --backend seatbelt --print: the command these flags run on macOS\n"
              "# (paths resolved on this host, in %s).\nexec %s\n", cwd.c_str(), policy::shell_quote(argv).c_str());
  return 0;
}

int print_check() {
  const auto& h = policy::host_support();
  std::printf("user namespaces: %s%s\n", h.userns ? "yes" : "no ",
              h.userns ? "" : ("(" + h.userns_detail + ")").c_str());
  std::printf("landlock ABI:    %d%s\n", h.landlock_abi, h.landlock_abi >= 2 ? "" : " (needs 2)");
  std::printf("uexec-init:      %s\n", h.init ? "loaded" : h.init_detail.c_str());
  std::printf("bwrap:           %s\n", h.bwrap.empty() ? "not installed" : (h.bwrap + " " + h.bwrap_version).c_str());
  std::printf("auto backend:    %s\n", h.userns && h.init ? "namespaces" : h.landlock_abi >= 2 ? "landlock" : "none (refuses)");
  std::printf("control planes:  %zu live uexec daemon(s) of this user, hidden from every sandbox (%s; with the "
              "network on their WebSocket ports stay reachable and answer 401)\n",
              policy::live_control_planes().size(), policy::control_registry_dir().c_str());
  std::printf("deny-read:       at launch exact, or refused (namespaces, bwrap; landlock refuses deny-read);\n"
              "                 files that appear later: namespaces only, best effort (readable until the mask\n"
              "                 lands; still open then: the session is ended)\n");
  std::printf("denial records:  seccomp denials on every backend; with --log-denials the writes the policy\n"
              "                 forbids and the reads of what it hides, with their paths (best effort: judged\n"
              "                 when the path is read; listed, never the verdict)\n");
  return 0;
}

// Asks on the controlling terminal; no terminal means denied (docs/sandbox.md §6.5).
policy::Decision ask_terminal(const policy::ApprovalRequest& r) {
  int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (tty < 0) {
    std::fprintf(stderr, "uexec: approval needed (%s) but there is no terminal to ask: denied\n", r.purpose.c_str());
    return policy::Decision::kDenied;
  }
  // Our stdin may be in raw mode for the command: ask in cooked mode.
  termios saved{}, cooked{};
  bool restore = ::tcgetattr(tty, &saved) == 0;
  if (restore) {
    cooked = saved;
    cooked.c_lflag |= ICANON | ECHO;
    ::tcsetattr(tty, TCSANOW, &cooked);
  }
  std::string cmd;
  for (const auto& a : r.command) cmd += (cmd.empty() ? "" : " ") + a;
  // What the sandboxed program named (a path in the denial) cannot redraw the question.
  std::string q = "\r\nuexec: " + base::terminal_text(r.reason) + "\r\n  command: " + base::terminal_text(cmd) + "\r\n";
  if (r.denial) q += "  denied:  " + base::terminal_text(r.denial->describe()) + "\r\n";
  q += "  [y] yes  [a] yes, and for this command from now on  [N] no  [q] abort: ";
  (void)!::write(tty, q.data(), q.size());
  char buf[16] = {};
  ssize_t n = ::read(tty, buf, sizeof buf - 1);
  if (restore) ::tcsetattr(tty, TCSANOW, &saved);
  ::close(tty);
  char c = n > 0 ? buf[0] : 'n';
  if (c == 'y' || c == 'Y') return policy::Decision::kApproved;
  if (c == 'a' || c == 'A') return policy::Decision::kApprovedForSession;
  if (c == 'q' || c == 'Q') return policy::Decision::kAbort;
  return policy::Decision::kDenied;
}

// --approval: the orchestrator decides the attempts (at most one retry), asking on the terminal.
int run_orchestrated(const policy::ExecRequest& req, const policy::PermissionProfile& profile, const Options& o) {
  policy::ToolOrchestrator orch([](const policy::ApprovalRequest& r, std::function<void(policy::Decision)> answer) {
    answer(ask_terminal(r));
  });
  policy::ToolCall call;
  call.argv = req.argv;
  call.cwd = req.cwd.empty() ? current_directory() : req.cwd;
  call.profile = profile;
  call.backend = o.backend;
  call.policy = o.approval;
  int code = kExitInternal;
  orch.run(
      call,
      [&](const policy::SandboxAttempt& a, std::function<void(policy::AttemptOutcome)> done) {
        RunOutcome r = run_attempt(req, a, o.log_denials);
        policy::AttemptOutcome out;
        out.exit_code = r.code;
        if (r.spawn_failed) {
          out.kind = policy::AttemptOutcome::Kind::kFailed;
          out.error = "could not start";
        } else if (r.denial) {
          out.kind = policy::AttemptOutcome::Kind::kDenied;
          out.denial = r.denial;
        }
        done(out);
      },
      [&](policy::CallResult r) {
        switch (r.kind) {
          case policy::CallResult::Kind::kRejected:
          case policy::CallResult::Kind::kAborted:
            std::fprintf(stderr, "uexec: %s\n", r.message.c_str());
            code = kExitInternal;
            break;
          case policy::CallResult::Kind::kDenied:
            if (!r.message.empty()) std::fprintf(stderr, "uexec: %s\n", r.message.c_str());
            code = r.exit_code;
            break;
          default:
            code = r.exit_code;
        }
      });
  return code;
}

int run_with(const std::vector<std::string>& args, bool sandbox_command) {
  const char* usage = sandbox_command ? kSandboxUsage : kRunUsage;
  const char* name = sandbox_command ? "uexec sandbox" : "uexec run";
  Options o;
  if (sandbox_command) o.mode = policy::SandboxMode::kWorkspaceWrite;
  ParsedArgs parsed = parse(args, o);
  if (parsed.help) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n%s", name, parsed.error.c_str(), usage);
    return kExitUsage;
  }
  if (o.check) return print_check();
  policy::ExecRequest req;
  req.argv = o.argv;
  req.cwd = o.cwd;
  req.tty = o.tty || (sandbox_command && ::isatty(0) == 1);
  req.env = build_env(o.env_overrides);
  req.stdin_pipe = !req.tty;
  if (o.size) {
    req.size = *o.size;
  } else if (req.tty && ::isatty(0)) {
    if (auto sz = pty::get_size(0); sz && sz->rows > 0 && sz->cols > 0) req.size = *sz;
  }
  policy::SandboxAttempt attempt = policy::SandboxAttempt::none();
  if (o.mode) {
    auto profile = policy::PermissionProfile::for_mode(*o.mode);
    profile.writable_roots = o.writable;
    profile.deny_read = o.deny_read;
    if (o.network) profile.network = *o.network;
    if (o.private_tmp) profile.slash_tmp = policy::TmpPolicy::kPrivate;
    if (!o.writable.empty() && *o.mode != policy::SandboxMode::kWorkspaceWrite) {
      std::fprintf(stderr, "%s: --writable needs --mode workspace-write\n", name);
      return kExitUsage;
    }
    if (o.print) return print_seatbelt(profile, req);
    auto a = policy::SandboxAttempt::select(profile, o.backend);
    if (!a) {
      std::fprintf(stderr, "%s: %s\n", name, a.error().message().c_str());
      return kExitInternal;
    }
    attempt = std::move(*a);
    if (o.approval != policy::ApprovalPolicy::kNever) return run_orchestrated(req, profile, o);
  }
  return run_request(std::move(req), attempt, o.log_denials);
}

}  // namespace

int exit_code_for_spawn_error(const base::Error& err) {
  if (err.code != base::Errc::kExecFailed || err.context.rfind("execve", 0) != 0) return kExitInternal;
  return err.sys_errno == ENOENT ? kExitNotFound : kExitCannotRun;
}

int cmd_run(const std::vector<std::string>& args) { return run_with(args, false); }
int cmd_sandbox(const std::vector<std::string>& args) { return run_with(args, true); }

int cmd_demo(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::fputs("usage: uexec demo\n", stderr);
    return kExitUsage;
  }
  const char* shell = std::getenv("SHELL");
  std::vector<std::string> run_args = {"--tty", "--", shell && *shell ? shell : "/bin/sh", "-l"};
  if (::isatty(0)) {
    std::fprintf(stderr, "uexec demo: a login shell in a uexec session; exit it to return.\r\n");
  }
  return cmd_run(run_args);
}

}  // namespace uexec::cli
