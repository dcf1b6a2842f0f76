package helper

import "golang.org/x/sys/unix"

func init() { legacyChmodNr = unix.SYS_CHMOD }
