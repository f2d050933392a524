#include "rpc/fs_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <set>
#include <vector>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "base/unique_fd.h"
#include "rpc/base64.h"
#include "rpc/environment_config.h"
#include "rpc/file_uri.h"
#include "rpc/json_rpc.h"  // the error codes

namespace uexec::rpc {

using nlohmann::json;

namespace {

// fs/readDirectory answers at most this many entries (and says `truncated`): one reply line.
constexpr std::size_t kMaxDirectoryEntries = 100000;

json fail(int code, std::string message, int err = 0) {
  json e = {{"code", code}, {"message", std::move(message)}};
  if (err) e["errno"] = err;
  return {{"error", std::move(e)}};
}

// Codex's classes: not found -32004, permission -32600, everything else -32603.
json os_error(int err) {
  int code = err == ENOENT ? kPathNotFound : (err == EACCES || err == EPERM) ? kInvalidRequest : kInternalError;
  const char* text = ::strerrordesc_np(err);  // thread-safe, unlike strerror
  return fail(code, fmt::format("{} (os error {})", text ? text : "Unknown error", err), err);
}

json ok(json result = json::object()) { return {{"result", std::move(result)}}; }

std::int64_t ms_of(const timespec& t) { return std::int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000; }

// "/a/b/" → "/a/b" (the root stays "/").
std::string trimmed(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

std::string parent_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

std::string name_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// followSymlinks:false: any component of the path that is a symbolic link.
bool has_symlink(const std::string& p) {
  for (std::size_t at = 1; at <= p.size(); ++at) {
    if (at != p.size() && p[at] != '/') continue;
    struct stat st {};
    if (::lstat(p.substr(0, at).c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return true;
  }
  return false;
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, data, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    data += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// Reads all of `fd` (a regular file), at most `max` bytes; EFBIG past that.
int read_all(int fd, std::size_t max, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t k = ::read(fd, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) return 0;
    if (out.size() + static_cast<std::size_t>(k) > max) return EFBIG;
    out.append(buf, static_cast<std::size_t>(k));
  }
}

json too_large() { return fail(kInvalidRequest, fmt::format("file is too large to read: limit is {} bytes", kReadFileMaxBytes)); }
json not_a_file(const std::string& p) { return fail(kInvalidRequest, fmt::format("path `{}` is not a file", p)); }

json get_metadata(const std::string& p, bool follow) {
  if (!follow && has_symlink(p)) return fail(kInvalidRequest, "path contains a symbolic link");
  struct stat ls {};
  if (::lstat(p.c_str(), &ls) != 0) return os_error(errno);
  struct stat st = ls;
  bool link = S_ISLNK(ls.st_mode);
  if (link && ::stat(p.c_str(), &st) != 0) return os_error(errno);
  std::int64_t created = 0;  // Codex fills it only without following links
  struct statx sx {};
  if (!follow && ::statx(AT_FDCWD, p.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME))
    created = std::int64_t{sx.stx_btime.tv_sec} * 1000 + sx.stx_btime.tv_nsec / 1000000;
  return ok({{"isDirectory", S_ISDIR(st.st_mode)},
             {"isFile", S_ISREG(st.st_mode)},
             {"isSymlink", link},
             {"size", static_cast<std::uint64_t>(st.st_size)},
             {"createdAtMs", created},
             {"modifiedAtMs", ms_of(st.st_mtim)}});
}

json read_file(const std::string& p, bool follow) {
  // O_NONBLOCK: a FIFO must not hang the open; it is refused below as not a file.
  base::UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW)));
  if (!fd) return os_error(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error(errno);
  if (!S_ISREG(st.st_mode)) return not_a_file(p);
  if (static_cast<std::uint64_t>(st.st_size) > kReadFileMaxBytes) return too_large();
  std::string data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  if (int err = read_all(fd.get(), kReadFileMaxBytes, data)) return err == EFBIG ? too_large() : os_error(err);
  return ok({{"dataBase64", base64_encode(data)}});
}

json write_file(const std::string& p, const std::string& b64, bool follow) {
  auto data = base64_decode(b64);
  if (!data) return fail(kInvalidRequest, "fs/writeFile requires valid base64 dataBase64");
  base::UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW), 0666));
  if (!fd) return os_error(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return os_error(errno);
  if (!S_ISREG(st.st_mode)) return not_a_file(p);
  if (::ftruncate(fd.get(), 0) != 0 || !write_all(fd.get(), data->data(), data->size())) return os_error(errno);
  int raw = fd.release();
  if (::close(raw) != 0 && errno != EINTR) return os_error(errno);
  return ok();
}

json create_directory(const std::string& p, bool recursive) {
  if (!recursive) return ::mkdir(p.c_str(), 0777) == 0 ? ok() : os_error(errno);
  for (std::size_t at = 1; at <= p.size(); ++at) {
    if (at != p.size() && p[at] != '/') continue;
    std::string prefix = p.substr(0, at);
    if (::mkdir(prefix.c_str(), 0777) == 0) continue;
    if (errno != EEXIST) return os_error(errno);
    struct stat st {};
    if (::stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    return os_error(at == p.size() ? EEXIST : ENOTDIR);
  }
  return ok();
}

// Removes `name` in `parent` and, for a directory, everything under it, never following a
// symbolic link (a link is removed, not its target). 0 or an errno.
int remove_tree_at(int parent, const char* name, int depth) {
  if (depth > kMaxTreeDepth) return ELOOP;
  int dfd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ENOTDIR || errno == ELOOP) return ::unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : errno;
    return errno == ENOENT ? 0 : errno;
  }
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    int err = errno;
    ::close(dfd);
    return err;
  }
  int err = 0;
  errno = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir)
      err = remove_tree_at(dfd, e->d_name, depth + 1);
    else if (::unlinkat(dfd, e->d_name, 0) != 0 && errno != ENOENT)
      err = errno;
    if (err) break;
  }
  ::closedir(dir);
  if (err) return err;
  return ::unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : errno;
}

json remove(const std::string& p, bool recursive, bool force, bool follow) {
  if (!follow && recursive) return fail(kInternalError, "recursive no-follow removal is unsupported");
  if (p == "/") return fail(kInvalidRequest, "fs/remove refuses to remove /");
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return errno == ENOENT && force ? ok() : os_error(errno);
  if (!S_ISDIR(st.st_mode)) return ::unlink(p.c_str()) == 0 || (errno == ENOENT && force) ? ok() : os_error(errno);
  if (!recursive) return ::rmdir(p.c_str()) == 0 ? ok() : os_error(errno);
  base::UniqueFd parent(::open(parent_of(p).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) return os_error(errno);
  int err = remove_tree_at(parent.get(), name_of(p).c_str(), 0);
  return err ? os_error(err) : ok();
}

json read_directory(const std::string& p) {
  DIR* dir = ::opendir(p.c_str());
  if (!dir) return os_error(errno);
  json entries = json::array();
  bool truncated = false;
  while (dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, 0) != 0) continue;  // a dangling link: left out, as Codex does
    if (entries.size() == kMaxDirectoryEntries) {
      truncated = true;
      break;
    }
    entries.push_back({{"fileName", e->d_name}, {"isDirectory", S_ISDIR(st.st_mode)}, {"isFile", S_ISREG(st.st_mode)}});
  }
  ::closedir(dir);
  json result = {{"entries", std::move(entries)}};
  if (truncated) result["truncated"] = true;
  return ok(std::move(result));
}

// fs/walk, as Codex 0.169.0 walks (checked live): breadth first, each directory's entries in
// byte order, the root itself not listed. Files and directories are listed (with
// followDirectorySymlinks, also a symlink to a directory, under its own path); other kinds,
// dangling links and links to files are left out but counted against maxEntries. A directory
// at depth d (the root's entries are depth 0) is read when d < maxDepth and it was not read
// already by another path (device and inode), so a link cycle ends. maxDirectories counts
// the directories read, the root included; reaching either limit says `truncated`. A
// directory that cannot be read is listed and named in `errors` with its os error.
json walk(const std::string& root, std::uint64_t max_depth, std::uint64_t max_dirs, std::uint64_t max_entries,
          bool follow) {
  max_dirs = std::min<std::uint64_t>(max_dirs, kMaxDirectoryEntries);
  max_entries = std::min<std::uint64_t>(max_entries, kMaxDirectoryEntries);
  json entries = json::array(), errors = json::array();
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0) return os_error(errno);
  if (S_ISLNK(st.st_mode) && (!follow || ::stat(root.c_str(), &st) != 0)) st.st_mode = 0;
  if (!S_ISDIR(st.st_mode)) return ok({{"entries", entries}, {"errors", errors}, {"truncated", false}});
  std::set<std::pair<dev_t, ino_t>> read_once = {{st.st_dev, st.st_ino}};
  std::deque<std::pair<std::string, std::uint64_t>> queue = {{root, 0}};
  std::uint64_t dirs_read = 0, seen = 0;
  bool truncated = false;
  while (!queue.empty() && !truncated) {
    auto [dir, depth] = std::move(queue.front());
    queue.pop_front();
    if (dirs_read >= max_dirs) {
      truncated = true;
      break;
    }
    ++dirs_read;
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
      int err = errno;
      const char* text = ::strerrordesc_np(err);
      errors.push_back({{"path", file_uri(dir)}, {"message", fmt::format("{} (os error {})", text ? text : "Unknown error", err)}});
      continue;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    const std::string prefix = dir == "/" ? "" : dir;
    for (const auto& name : names) {
      if (seen >= max_entries) {
        truncated = true;
        break;
      }
      ++seen;
      std::string path = prefix + "/" + name;
      if (::lstat(path.c_str(), &st) != 0) continue;
      bool is_dir = S_ISDIR(st.st_mode);
      if (S_ISLNK(st.st_mode)) {
        if (!follow || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        is_dir = true;
      } else if (!is_dir && !S_ISREG(st.st_mode)) {
        continue;
      }
      entries.push_back({{"path", file_uri(path)}, {"kind", is_dir ? "directory" : "file"}});
      if (is_dir && depth < max_depth && read_once.insert({st.st_dev, st.st_ino}).second) queue.emplace_back(path, depth + 1);
    }
  }
  return ok({{"entries", std::move(entries)}, {"errors", std::move(errors)}, {"truncated", truncated}});
}

int copy_file(const std::string& from, const std::string& to, mode_t mode) {
  base::UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) return errno;
  base::UniqueFd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 07777));
  if (!out) return errno;
  char buf[65536];
  for (;;) {
    ssize_t k = ::read(in.get(), buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) return 0;
    if (!write_all(out.get(), buf, static_cast<std::size_t>(k))) return errno;
  }
}

int copy_link(const std::string& from, const std::string& to) {
  char target[PATH_MAX];
  ssize_t n = ::readlink(from.c_str(), target, sizeof target - 1);
  if (n < 0) return errno;
  target[n] = '\0';
  struct stat st {};
  if (::lstat(to.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (::unlink(to.c_str()) != 0) return errno;
  }
  return ::symlink(target, to.c_str()) == 0 ? 0 : errno;
}

constexpr int kUnsupportedType = -1;  // copy_tree: a file that is neither regular, a directory nor a link

int copy_tree(const std::string& from, const std::string& to, mode_t mode, int depth) {
  if (depth > kMaxTreeDepth) return ELOOP;
  if (::mkdir(to.c_str(), mode & 07777) != 0) {
    struct stat st {};
    if (errno != EEXIST || ::stat(to.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return errno == EEXIST ? ENOTDIR : errno;
  }
  DIR* dir = ::opendir(from.c_str());
  if (!dir) return errno;
  int err = 0;
  while (dirent* e = ::readdir(dir)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string src = from + "/" + e->d_name, dst = to + "/" + e->d_name;
    struct stat st {};
    if (::lstat(src.c_str(), &st) != 0) {
      err = errno;
    } else if (S_ISDIR(st.st_mode)) {
      err = copy_tree(src, dst, st.st_mode, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      err = copy_file(src, dst, st.st_mode);
    } else if (S_ISLNK(st.st_mode)) {
      err = copy_link(src, dst);
    } else {
      err = kUnsupportedType;
    }
    if (err) break;
  }
  ::closedir(dir);
  return err;
}

json copy_error(int err) {
  if (err == kUnsupportedType) return fail(kInvalidRequest, "fs/copy only supports regular files, directories, and symlinks");
  return os_error(err);
}

// The canonical form of a path that may not exist yet: its parent resolved, its name kept.
std::string canonical_destination(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf)) return buf;
  if (!::realpath(parent_of(p).c_str(), buf)) return p;
  std::string parent = buf;
  return (parent == "/" ? "" : parent) + "/" + name_of(p);
}

json copy(const std::string& from, const std::string& to, bool recursive) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return os_error(errno);
  if (S_ISLNK(st.st_mode)) {
    int err = copy_link(from, to);
    return err ? os_error(err) : ok();
  }
  if (S_ISREG(st.st_mode)) {
    int err = copy_file(from, to, st.st_mode);
    return err ? os_error(err) : ok();
  }
  if (!S_ISDIR(st.st_mode)) return copy_error(kUnsupportedType);
  if (!recursive) return fail(kInvalidRequest, "fs/copy requires recursive: true when sourcePath is a directory");
  std::string src = canonical_destination(from), dst = canonical_destination(to);
  if (dst == src || dst.rfind(src + "/", 0) == 0)
    return fail(kInvalidRequest, "fs/copy cannot copy a directory to itself or one of its descendants");
  int err = copy_tree(from, to, st.st_mode, 0);
  return err ? copy_error(err) : ok();
}

json canonicalize(const std::string& p) {
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return os_error(errno);
  return ok({{"path", std::string(buf)}});
}

bool flag(const json& op, const char* key, bool fallback) {
  return op.contains(key) && op[key].is_boolean() ? op[key].get<bool>() : fallback;
}

}  // namespace

// fs/watchMissing's plan (missing_watch.h): which directory to watch for which entry. Not
// watching (watching:false) when nothing is missing, a missing path exists, or `present` does not.
json watch_plan(const json& op) {
  json targets = json::array();
  auto no = [] { return json{{"result", {{"watching", false}}}}; };
  const json& missing = op.at("missing");
  if (missing.empty()) return no();
  auto split = [](const std::string& p) {
    auto slash = p.rfind('/');
    return std::pair<std::string, std::string>(slash == 0 ? "/" : p.substr(0, slash), p.substr(slash + 1));
  };
  struct stat st {};
  for (const auto& m : missing) {
    std::string path = trimmed(m.get<std::string>());
    if (::lstat(path.c_str(), &st) == 0) return no();
    // The deepest directory on the way that exists: its entry on the way is what appears next.
    std::string below = path;
    for (;;) {
      auto [dir, name] = split(below);
      if (::stat(dir.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) targets.push_back({{"dir", dir}, {"name", name}});
        else targets.push_back({{"dir", split(dir).first}, {"name", split(dir).second}});  // a file in the way
        break;
      }
      if (dir == "/") break;
      below = dir;
    }
  }
  if (op.contains("present") && op["present"].is_string()) {
    std::string present = trimmed(op["present"].get<std::string>());
    if (::lstat(present.c_str(), &st) != 0) return no();
    if (present != "/") {
      auto [dir, name] = split(present);
      targets.push_back({{"dir", dir}, {"name", name}});
    }
  }
  return {{"result", {{"watching", true}, {"targets", targets}}}};
}

json perform_fs_op(const json& op) noexcept {
  try {
    std::string method = op.at("method").get<std::string>();
    std::string path = op.contains("path") ? trimmed(op["path"].get<std::string>()) : std::string();
    bool follow = flag(op, "followSymlinks", true);
    if (method == "fs/getMetadata") return get_metadata(path, follow);
    if (method == "fs/readFile") return read_file(path, follow);
    if (method == "fs/writeFile") return write_file(path, op.at("dataBase64").get<std::string>(), follow);
    if (method == "fs/createDirectory") return create_directory(path, flag(op, "recursive", true));
    if (method == "fs/remove") return remove(path, flag(op, "recursive", true), flag(op, "force", true), follow);
    if (method == "fs/readDirectory") return read_directory(path);
    if (method == "fs/copy")
      return copy(trimmed(op.at("sourcePath").get<std::string>()), trimmed(op.at("destinationPath").get<std::string>()),
                  flag(op, "recursive", false));
    if (method == "fs/canonicalize") return canonicalize(path);
    if (method == "fs/watchMissing") return watch_plan(op);
    if (method == "fs/walk")
      return walk(path, op.at("maxDepth").get<std::uint64_t>(), op.at("maxDirectories").get<std::uint64_t>(),
                  op.at("maxEntries").get<std::uint64_t>(), op.at("followDirectorySymlinks").get<bool>());
    if (method == "environmentConfig/read") return read_environment_config(environment_config_query(op));
    return fail(-32601, "no file operation " + method);
  } catch (const std::bad_alloc&) {
    return fail(kInternalError, "out of memory");
  } catch (const std::exception& e) {
    return fail(kInvalidParams, std::string("invalid file operation: ") + e.what());
  }
}

}  // namespace uexec::rpc
