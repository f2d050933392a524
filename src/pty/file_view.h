// file_view.h: what a sandbox lets its command read and change, as the listener that records
// the other file calls sees it (--log-denials; pty/write_notice.h, docs/sandbox.md §5.4).
#pragma once

#include <string>
#include <vector>

namespace uexec::pty {

struct FileView {
  bool setid_evidence = false;  // the filter's root rules: creating a setuid file is denied
  // The namespace backend: uexec-init judges by the mounts of the view it is in (read-only
  // mounts, masks). Otherwise the manager's listener judges by these lists (policy::ResolvedPolicy's).
  bool by_mounts = false;
  bool full_write = false;               // "/" writable (danger-full-access with deny entries)
  bool private_tmp = false;              // a fresh tmpfs on /tmp
  std::vector<std::string> writable;     // writable roots
  std::vector<std::string> read_only;    // carve-outs and stubs inside them
  std::vector<std::string> unreadable;   // masked or kept out of the read grant: deny-read, control planes
  // Something is hidden (`unreadable`, or deny-read patterns masked later): the filter holds
  // every open, not only those that write, so that reads of it are listed.
  bool judges_reads = false;

  // Is writing `path` (absolute, resolved) forbidden? Device and process files never count.
  bool forbids_write(const std::string& path) const;
  // Is reading `path`, or anything below it, forbidden?
  bool forbids_read(const std::string& path) const;
};

}  // namespace uexec::pty
