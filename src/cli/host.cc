// host.cc: a front door's loop, manager, services and front doors (host.h).
#include "cli/host.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "base/log.h"
#include "base/self_exe.h"
#include "cli/session_defaults.h"

namespace uexec::cli {

std::vector<std::unique_ptr<loop::SignalWatcher>> on_stop_signals(loop::Loop& loop, std::function<void()> stop) {
  std::vector<std::unique_ptr<loop::SignalWatcher>> watchers;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    auto w = std::make_unique<loop::SignalWatcher>(loop);
    if (w->start(sig, [stop](int) { stop(); })) watchers.push_back(std::move(w));
  }
  return watchers;
}

std::unique_ptr<Host> Host::create(const HostOptions& options) {
  base::Config cfg;
  if (!containment_from_env(cfg, options.who)) return nullptr;
  // A closed output stream is drained this long for a last reader (protocol closeDrainMs,
  // docs/agent.md §1.1).
  cfg.close_drain = std::chrono::milliseconds{1000};
  if (options.terminate_grace) cfg.terminate_grace = *options.terminate_grace;
  cfg.containment_owner = options.containment_owner;
  cfg.held = options.containment_owner != 0;
  if (options.config) {
    cfg.retain_bytes = options.config->ring_bytes;
    cfg.agent.max_output_tokens = options.config->max_output_tokens;
    cfg.agent.env_preset = options.config->env_preset;
  }
  // Before the first sandbox: the config's directory exists, so every sandbox keeps it read-only.
  ensure_config_dir();
  std::unique_ptr<journal::JournalWriter> writer;
  if (options.journal) {
    std::string root = options.journal_root.empty() ? journal::default_root() : options.journal_root;
    auto w = journal::JournalWriter::open(root, *options.journal);
    if (!w) {
      std::fprintf(stderr, "%s: the journal: %s\n", options.who, w.error().message().c_str());
      return nullptr;
    }
    writer = std::move(*w);
  }
  // Before the manager makes this process a child subreaper: the watcher re-parents to init,
  // never to us. /proc/self/exe runs this very image even after an upgrade replaced the file.
  std::unique_ptr<session::OwnerLifeline> lifeline;
  if (options.sessions_end_with_host) {
    if (auto l = session::OwnerLifeline::start("/proc/self/exe"))
      lifeline = std::move(*l);
    else
      std::fprintf(stderr, "%s: warning: if this process is killed, its pipe sessions may run on: %s\n", options.who,
                   l.error().message().c_str());
  }
  auto host = std::unique_ptr<Host>(new Host(options, cfg));
  if (writer) {
    host->journal_ = std::make_unique<journal::SessionJournal>(host->loop_, std::move(writer));
    host->pm_->add_recorder(host->journal_.get());
    host->exec_->use_journal(host->journal_->writer().root());
  }
  if (lifeline) {
    host->lifeline_ = std::move(lifeline);
    host->pm_->set_lifeline(host->lifeline_.get());
  }
  return host;
}

Host::Host(const HostOptions& options, const base::Config& cfg)
    : env_(process_environment()), cwd_(current_directory()) {
  pm_ = std::make_unique<session::ProcessManager>(loop_, cfg);
  exec_ = std::make_unique<agent::AgentService>(*pm_, env_, cwd_);
  if (options.sandbox && options.sandbox->profile)
    exec_->set_default_sandbox(*options.sandbox->profile, options.sandbox->backend, options.sandbox->approval);
  if (options.exec_server) {
    rpc::ExecServerOptions server_options = *options.exec_server;
    // The CLI's servers serve files; sandboxed calls run this very binary as `uexec fs-helper`.
    server_options.file_system = true;
    server_options.fs_helper = base::self_exe();
    server_ = std::make_unique<rpc::ExecServer>(*pm_, exec_.get(), env_, cwd_, server_options);
  }
}

Host::~Host() { teardown(); }

base::Result<std::size_t> Host::take_holder(base::UniqueFd link, std::function<void()> on_lost) {
  std::vector<holder::Adoptee> adoptees;
  auto connected = holder::HolderLink::connect(loop_, *pm_, std::move(link), std::chrono::seconds(60), &adoptees);
  if (!connected) return connected.error();
  holder_ = std::move(*connected);
  if (server_) holder_->owner_of = [this](const session::Session& s) { return server_->owner_of(s); };
  holder_->on_holder_lost = std::move(on_lost);
  holder_->on_upgrade = [this] { upgrade(); };
  pm_->add_recorder(holder_.get());
  std::size_t taken = 0;
  for (auto& a : adoptees) {
    std::string key = a.handover.id;
    pid_t pid = a.handover.pid;
    holder_->expect(key, a.slot);
    auto id = pm_->adopt(std::move(a.handover));
    if (!id) {
      UEXEC_LOG(kWarn, "could not take over process {} (pid {}): {}", key, pid, id.error().message());
      holder_->release(key);
      continue;
    }
    if (server_) {
      if (auto r = server_->adopt(*pm_->find(*id), a.owner); !r) {
        UEXEC_LOG(kWarn, "process {} (pid {}) runs on, but no client can reach it: {}", key, pid, r.error().message());
        continue;
      }
    }
    ++taken;
  }
  if (auto r = holder_->start(); !r) return r.error();
  return taken;
}

base::Result<void> Host::listen_unix(const std::string& path) {
  unix_ = std::make_unique<rpc::UnixServer>(loop_, *server_);
  if (base::UniqueFd inherited = holder_ ? holder_->take_listener("unix") : base::UniqueFd(); inherited) {
    if (auto r = unix_->listen_inherited(std::move(inherited), path); r) return r;
    else UEXEC_LOG(kWarn, "{}; listening anew", r.error().message());
    unix_ = std::make_unique<rpc::UnixServer>(loop_, *server_);
  }
  return unix_->listen(path);
}

#if UEXEC_HAVE_LWS
base::Result<int> Host::listen_ws(const web::WsOptions& options) {
  ws_ = std::make_unique<web::WsServer>(loop_, *server_, options);
  if (auto r = ws_->start(holder_ ? holder_->take_listener("ws") : base::UniqueFd()); !r) return r.error();
  return ws_->port();
}
#endif

base::Result<void> Host::serve_stdio(bool kill_at_eof) {
  stdio_ = std::make_unique<rpc::LineChannel>(loop_, 0, 1);
  rpc::LineChannel& channel = *stdio_;
  // Above the high watermark stdin is not read (docs/protocol.md §7); no `close`: stdio is
  // never closed for a stall, its client is the one that started us.
  stdio_conn_ = server_->connect({[&channel](std::string m) { channel.send(std::move(m)); },
                                  [&channel] { return channel.queued_bytes(); },
                                  [&channel](std::size_t n, std::function<void()> fn) {
                                    channel.when_below(n, std::move(fn));
                                  },
                                  [&channel](bool on) { on ? channel.resume_reading() : channel.pause_reading(); }});
  channel.on_line = [this](std::string_view line) { stdio_conn_->handle_line(line); };
  channel.on_oversize = [this](std::size_t limit) { stdio_conn_->handle_oversize(limit); };
  channel.on_eof = [this, kill_at_eof] { stop(kill_at_eof); };
  return channel.start();
}

base::Result<void> Host::serve_mcp_stdio(bool structured_content) {
  stdio_ = std::make_unique<rpc::LineChannel>(loop_, 0, 1);
  rpc::LineChannel& channel = *stdio_;
  mcp_ = std::make_unique<rpc::McpServer>(*exec_, [&channel](std::string msg) { channel.send(std::move(msg)); });
  mcp_->set_structured_content(structured_content);
  mcp_->set_default_output_tokens(exec_->config().max_output_tokens);
  channel.on_line = [this](std::string_view line) { mcp_->handle_line(line); };
  channel.on_oversize = [this](std::size_t limit) { mcp_->handle_oversize(limit); };
  channel.on_eof = [this] { stop(false); };
  return channel.start();
}

void Host::run() {
  // The front doors keep the loop alive; signal watchers are unref'd.
  stop_watchers_ = on_stop_signals(loop_, [this] { stop(false); });
  loop_.run();
  teardown();
}

void Host::stop(bool kill_now) {
  if (stopping_) return;
  stopping_ = true;
  if (on_stopping) on_stopping();
  unix_.reset();  // no new clients; detaches the connected ones
#if UEXEC_HAVE_LWS
  if (ws_) ws_->stop();
#endif
  if (stdio_) stdio_->stop_reading();
  if (mcp_) mcp_->deny_pending_approvals();  // nobody is left to answer them
  // What stdout still holds is the client's last answers: flush it before the loop stops.
  auto done = [this] {
    if (stdio_) stdio_->when_flushed([this] { loop_.stop(); });
    else loop_.stop();
  };
  if (server_) {
    // Both end their processes; the loop waits for the server's shutdown.
    exec_->shutdown([] {});
    server_->shutdown(kill_now, done);
  } else {
    exec_->shutdown(done);
  }
}

void Host::upgrade() {
  if (stopping_ || !holder_) return;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, holder::CarriedSession>> carried;
  std::vector<std::pair<std::string, int>> stdin_pipes;
  for (session::Session* s : pm_->sessions()) {
    holder::CarriedSession c;
    if (s->finished()) {  // the holder let it go: its facts and end travel with its output
      c.pid = s->pid();
      c.facts = holder_->facts_text(*s);
    } else if (!holder_->holds(s->id())) {
      continue;  // not held (no slot was free): it ends with this daemon, as it would in a crash
    }
    c.state = s->carry();
    carried.emplace_back(s->id(), std::move(c));
    if (const auto* p = s->process(); p && !s->finished() && p->stdin_pipe_fd() >= 0)
      stdin_pipes.emplace_back(s->id(), p->stdin_pipe_fd());
  }
  std::vector<std::pair<std::string, int>> listeners{{"unix", unix_ ? unix_->listener_fd() : -1}};
#if UEXEC_HAVE_LWS
  listeners.emplace_back("ws", ws_ ? ws_->listener_fd() : -1);
#endif
  if (auto r = holder_->hand_over(carried, stdin_pipes, listeners); !r) {
    UEXEC_LOG(kError, "upgrade: the hand-over to the holder failed ({}); this daemon goes on", r.error().message());
    return;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "uexec serve: upgrade: handed %zu processes over in %lld ms; leaving to the new daemon\n",
               carried.size(), static_cast<long long>(ms));
  if (journal_) {  // it writes what it queued; nothing else is torn down
    pm_->remove_recorder(journal_.get());
    journal_.reset();
  }
  std::fflush(nullptr);
  ::_exit(0);
}

void Host::teardown() {
  stop_watchers_.clear();
  unix_.reset();
#if UEXEC_HAVE_LWS
  ws_.reset();
#endif
  stdio_conn_.reset();
  mcp_.reset();
  stdio_.reset();
  server_.reset();
  exec_.reset();
  if (pm_ && journal_) pm_->remove_recorder(journal_.get());  // what is still running now ends unrecorded
  if (pm_ && holder_) pm_->remove_recorder(holder_.get());
  pm_.reset();
  holder_.reset();
  lifeline_.reset();  // disarmed: the manager ended every session
  journal_.reset();  // writes what is queued
}

}  // namespace uexec::cli
