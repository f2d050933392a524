// Unit tests for rpc::perform_fs_op (fs_ops.h): the edges the Codex conformance suite does not
// reach, on a scratch tree under /var/tmp. Each test makes its own tree and removes it.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "rpc/fs_ops.h"
#include "helpers/temp_dir.h"

using nlohmann::json;
using uexec::rpc::perform_fs_op;

namespace {

struct Tree : uexec::test::TempDir {
  Tree() : TempDir("uexec-fs-ops", "/var/tmp") {}
  const std::string& root = path;
};

int code_of(const json& outcome) { return outcome.contains("error") ? outcome["error"]["code"].get<int>() : 0; }

}  // namespace

TEST_CASE("fs ops: fs/remove never follows a link out of the tree it removes, and refuses /") {
  Tree t;
  ::mkdir((t / "outside").c_str(), 0755);
  t.write("outside/keep.txt", "keep");
  ::mkdir((t / "tree").c_str(), 0755);
  ::mkdir((t / "tree/a").c_str(), 0755);
  ::symlink((t / "outside").c_str(), (t / "tree/a/link").c_str());
  t.write("tree/a/f.txt", "x");
  CHECK(code_of(perform_fs_op({{"method", "fs/remove"}, {"path", t / "tree"}})) == 0);
  CHECK(::access((t / "tree").c_str(), F_OK) != 0);
  CHECK(::access((t / "outside/keep.txt").c_str(), F_OK) == 0);
  json root = perform_fs_op({{"method", "fs/remove"}, {"path", "/"}});
  CHECK(code_of(root) == -32600);
}

TEST_CASE("fs ops: fs/readFile refuses a FIFO at once and a file over the limit") {
  Tree t;
  REQUIRE(::mkfifo((t / "fifo").c_str(), 0600) == 0);
  json fifo = perform_fs_op({{"method", "fs/readFile"}, {"path", t / "fifo"}});  // must not block
  CHECK(code_of(fifo) == -32600);
  CHECK(fifo["error"]["message"].get<std::string>().find("is not a file") != std::string::npos);
  { std::ofstream(t / "big"); }
  REQUIRE(::truncate((t / "big").c_str(), static_cast<off_t>(uexec::rpc::kReadFileMaxBytes) + 1) == 0);
  json big = perform_fs_op({{"method", "fs/readFile"}, {"path", t / "big"}});
  CHECK(code_of(big) == -32600);
  CHECK(big["error"]["message"].get<std::string>().find("too large") != std::string::npos);
  json fifo_write = perform_fs_op({{"method", "fs/writeFile"}, {"path", t / "fifo"}, {"dataBase64", "eA=="}});
  CHECK(code_of(fifo_write) != 0);  // no reader: refused, never a hang
}

TEST_CASE("fs ops: followSymlinks:false refuses a link anywhere in the path; errno travels with the error") {
  Tree t;
  ::mkdir((t / "dir").c_str(), 0755);
  t.write("dir/f.txt", "x");
  ::symlink("dir", (t / "link").c_str());
  json meta = perform_fs_op({{"method", "fs/getMetadata"}, {"path", t / "link/f.txt"}, {"followSymlinks", false}});
  CHECK(code_of(meta) == -32600);
  json plain = perform_fs_op({{"method", "fs/getMetadata"}, {"path", t / "dir/f.txt"}, {"followSymlinks", false}});
  CHECK(code_of(plain) == 0);
  json read = perform_fs_op({{"method", "fs/readFile"}, {"path", t / "link"}, {"followSymlinks", false}});
  CHECK(code_of(read) != 0);
  json missing = perform_fs_op({{"method", "fs/readFile"}, {"path", t / "nope"}});
  CHECK(code_of(missing) == uexec::rpc::kPathNotFound);
  CHECK(missing["error"]["errno"] == ENOENT);
  json bad = perform_fs_op({{"method", "fs/writeFile"}, {"path", t / "x"}});  // no dataBase64
  CHECK(code_of(bad) == -32602);
}
