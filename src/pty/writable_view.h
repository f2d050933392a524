// writable_view.h: what a sandbox lets its command change, as the listener that records the
// other writes sees it (--log-denials; pty/write_notice.h, docs/sandbox.md §5.4).
#pragma once

#include <string>
#include <vector>

namespace uexec::pty {

struct WritableView {
  bool setid_evidence = false;  // the filter's root rules: creating a setuid file is denied
  // The namespace backend: uexec-init judges by the read-only mounts of the view it is in.
  // Otherwise the manager's listener judges by these lists (policy::ResolvedPolicy's).
  bool by_mounts = false;
  bool full_write = false;             // "/" writable (danger-full-access with deny entries)
  bool private_tmp = false;            // a fresh tmpfs on /tmp
  std::vector<std::string> writable;   // writable roots
  std::vector<std::string> read_only;  // carve-outs and stubs inside them

  // Is writing `path` (absolute, folded) forbidden? Device and process files never count.
  bool forbids(const std::string& path) const;
};

}  // namespace uexec::pty
