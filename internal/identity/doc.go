// Package identity owns what a program file is: its device and inode,
// ELF build id, SHA-256 and ELF structure, so that any copy, link, rename
// or memfd copy of git (or another policed program) is known as that
// program whatever its name, with a cache of what it has already read.
// It imports only the program table (internal/programs): no policy, no
// approver, no audit.
package identity
