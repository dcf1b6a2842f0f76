// Package gitwire checks a git push on the wire: the body of a smart-HTTP
// receive-pack request (POST .../git-receive-pack,
// application/x-git-receive-pack-request) read as it streams to the
// server, its ref update commands held against what was approved, and the
// pack walked to prove that every update is a fast-forward.
//
// It owns three things: the request's grammar (pkt-lines: shallow lines,
// the commands, the first one's capabilities, push options, the flush;
// SHA-1 and SHA-256 object ids), the pack's grammar (PACK v2/v3, object
// headers, zlib data, OFS_DELTA/REF_DELTA, the trailer checksum), and the
// refusal git understands (a receive-pack report-status answer, with
// side-band-64k when the client asked for it, so git prints
// "! [remote rejected] ref (reason)").
//
// Everything fails closed: bytes it cannot parse, a section over its cap, a
// fast-forward it cannot prove from the commits the pack carries (whole,
// or as deltas of commits it carries; each id computed from the content),
// are all
// refusals (a *RefusedError naming the ref and the reason). A [Guard] hands
// the request's bytes on as it reads them but holds back the command
// section until the commands are checked and the pack's trailer until the
// whole pack is, so a server behind it never receives a complete refused
// push. Memory is bounded by [Limits]; the pack itself is never buffered.
//
// The package imports nothing of this module (a leaf in arch_test.go):
// internal/egress calls it for the receive-pack requests of the hosts it
// inspects.
package gitwire
