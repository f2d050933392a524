// environment_config.cc: environmentConfig/read's layers and key selection (environment_config.h).
#include "rpc/environment_config.h"

#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include <fmt/core.h>

#include "rpc/file_uri.h"

namespace uexec::rpc {

namespace {

using nlohmann::json;

constexpr int kInternalError = -32603;
constexpr std::size_t kMaxConfigBytes = 4u << 20;  // a config file larger than this is not read

// A git repository's root: a `.git` directory with a HEAD, or a `.git` file (a worktree's or
// submodule's gitdir link). An empty `.git` directory does not make one, for Codex either.
bool git_root(const std::string& dir) {
  struct stat st {};
  std::string dot_git = (dir == "/" ? std::string() : dir) + "/.git";
  if (::stat(dot_git.c_str(), &st) != 0) return false;
  if (S_ISREG(st.st_mode)) return true;
  return S_ISDIR(st.st_mode) && ::stat((dot_git + "/HEAD").c_str(), &st) == 0;
}

std::string parent_of(const std::string& dir) {
  auto slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

struct Loaded {
  std::optional<toml::table> table;  // nullopt: no file
  std::string error;                 // a file that is not TOML (or cannot be read)
};

Loaded load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string text;
  char buf[16384];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) return {std::nullopt, path + ": larger than 4 MiB"};
  }
  try {
    return {toml::parse(text, path), {}};
  } catch (const toml::parse_error& e) {
    return {std::nullopt, fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column,
                                      e.description())};
  }
}

// The keys of `from` that `paths` select, in a table of their own.
toml::table select(const toml::table& from, const std::vector<std::vector<std::string>>& paths) {
  toml::table out;
  for (const auto& path : paths) {
    const toml::node* node = &from;
    std::size_t depth = 0;
    for (; depth < path.size(); ++depth) {
      const toml::table* t = node->as_table();
      if (!t) break;  // the path runs into a value: that value is selected
      node = t->get(path[depth]);
      if (!node) break;
    }
    if (!node || depth == 0) continue;
    // Place `node` at path[0..depth) in `out`, making the tables on the way.
    toml::table* at = &out;
    for (std::size_t i = 0; i + 1 < depth; ++i) {
      toml::node* next = at->get(path[i]);
      if (!next || !next->is_table()) {
        at->insert_or_assign(path[i], toml::table{});
        next = at->get(path[i]);
      }
      at = next->as_table();
    }
    node->visit([&](const auto& v) { at->insert_or_assign(path[depth - 1], v); });
  }
  return out;
}

json layer(const std::string& source, const std::string& base_dir, const toml::table& selected) {
  std::ostringstream text;
  text << toml::toml_formatter(selected);
  std::string toml_text = text.str();
  if (!toml_text.empty() && toml_text.back() != '\n') toml_text += '\n';
  return {{"source", source}, {"baseDir", file_uri(base_dir)}, {"toml", toml_text}};
}

bool trusted(const toml::table& user, const std::string& dir) {
  const toml::table* projects = user["projects"].as_table();
  if (!projects) return false;
  const toml::table* entry = (*projects)[dir].as_table();
  if (!entry) return false;
  auto level = (*entry)["trust_level"].value<std::string>();
  return level && *level == "trusted";
}

json fail(const std::string& message) { return {{"error", {{"code", kInternalError}, {"message", message}}}}; }

}  // namespace

json environment_config_op(const EnvironmentConfigQuery& q) {
  return {{"method", "environmentConfig/read"}, {"cwd", q.cwd},       {"configPaths", q.config_paths},
          {"requirementsPaths", q.requirements_paths},                {"codexHome", q.codex_home},
          {"home", q.home},                                           {"hostname", q.hostname}};
}

EnvironmentConfigQuery environment_config_query(const json& op) {
  EnvironmentConfigQuery q;
  q.cwd = op.at("cwd").get<std::string>();
  q.config_paths = op.at("configPaths").get<std::vector<std::vector<std::string>>>();
  q.requirements_paths = op.at("requirementsPaths").get<std::vector<std::vector<std::string>>>();
  q.codex_home = op.at("codexHome").get<std::string>();
  q.home = op.at("home").get<std::string>();
  q.hostname = op.at("hostname").get<std::string>();
  return q;
}

json read_environment_config(const EnvironmentConfigQuery& q) noexcept {
  try {
    json layers = json::array();
    const std::string user_file = q.codex_home + "/config.toml";
    Loaded u = load(user_file);
    if (!u.error.empty()) return fail("failed to load executor-local config: " + u.error);
    const std::optional<toml::table>& user = u.table;
    if (user) {
      toml::table selected = select(*user, q.config_paths);
      if (!selected.empty()) layers.push_back(layer("user (" + user_file + ")", q.codex_home, selected));
    }
    // The project: the nearest ancestor of the cwd with a .git, else the cwd alone.
    std::string root = q.cwd;
    for (std::string d = q.cwd;; d = parent_of(d)) {
      if (git_root(d)) {
        root = d;
        break;
      }
      if (d == "/") break;
    }
    if (user && (trusted(*user, root) || trusted(*user, q.cwd))) {
      std::vector<std::string> dirs;  // the cwd up to the root, then reversed
      for (std::string d = q.cwd;; d = parent_of(d)) {
        dirs.push_back(d);
        if (d == root || d == "/") break;
      }
      for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        std::string base = (*it == "/" ? std::string() : *it) + "/.codex";
        std::string file = base + "/config.toml";
        Loaded p = load(file);
        if (!p.error.empty()) return fail("failed to load executor-local config: " + p.error);
        if (!p.table) continue;
        toml::table selected = select(*p.table, q.config_paths);
        if (!selected.empty()) layers.push_back(layer("project (" + file + ")", base, selected));
      }
    }
    json home = q.home.empty() ? json() : json(file_uri(q.home));
    return {{"result",
             {{"userHomeDir", home},
              {"codexHomeDir", file_uri(q.codex_home)},
              {"hostname", q.hostname.empty() ? json() : json(q.hostname)},
              {"config", {{"layers", layers}, {"cloudInsertionIndex", 0}}},
              {"requirements", {{"layers", json::array()}, {"cloudInsertionIndex", 0}}}}}};
  } catch (const std::exception& e) {
    return fail(std::string("failed to load executor-local config: ") + e.what());
  }
}

}  // namespace uexec::rpc
