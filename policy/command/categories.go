package command

// Category bits; Item.Categories holds their names (Forge's categories).
const (
	catRead uint8 = 1 << iota
	catWrite
	catExecute
	catNetwork
	catDestructive
)

// catNames are the category names in bit order.
var catNames = [...]string{"read", "write", "execute", "network", "destructive"}

// catSlices maps a category bit set to a shared, never-modified slice of
// names, so building an Item allocates nothing for its categories.
var catSlices = func() (t [32][]string) {
	for m := range t {
		var s []string
		for i, n := range catNames {
			if m&(1<<i) != 0 {
				s = append(s, n)
			}
		}
		t[m] = s
	}
	return t
}()

// categories returns the shared name slice for bit set m. Callers must not
// modify it.
func categories(m uint8) []string { return catSlices[m&31] }

// programCats are the categories of well-known programs beyond "execute"
// (which every program start has). Option-dependent categories (sed -i,
// find -delete, sort -o) are added by the tool handlers.
var programCats = map[string]uint8{
	// network
	"curl": catNetwork, "wget": catNetwork | catWrite, "ssh": catNetwork, "scp": catNetwork | catWrite,
	"sftp": catNetwork, "rsync": catNetwork | catWrite, "nc": catNetwork, "ncat": catNetwork,
	"netcat": catNetwork, "socat": catNetwork, "telnet": catNetwork, "ftp": catNetwork,
	"lftp": catNetwork, "tftp": catNetwork, "ping": catNetwork, "dig": catNetwork,
	"nslookup": catNetwork, "host": catNetwork, "http": catNetwork, "https": catNetwork,
	"aria2c": catNetwork | catWrite, "ssh-keyscan": catNetwork, "ssh-copy-id": catNetwork,
	"sshpass": catNetwork, "mosh": catNetwork, "whois": catNetwork, "traceroute": catNetwork,
	// destructive
	"rm": catDestructive | catWrite, "rmdir": catDestructive | catWrite, "unlink": catDestructive | catWrite,
	"shred": catDestructive | catWrite, "dd": catDestructive | catWrite, "truncate": catDestructive | catWrite,
	"wipefs": catDestructive, "mkfs": catDestructive, "fdisk": catDestructive, "kill": catDestructive,
	"pkill": catDestructive, "killall": catDestructive, "mv": catDestructive | catWrite,
	// write
	"cp": catWrite, "install": catWrite, "ln": catWrite, "touch": catWrite, "mkdir": catWrite,
	"tee": catWrite, "chmod": catWrite, "chown": catWrite, "chgrp": catWrite, "patch": catWrite,
	"tar": catWrite | catRead, "unzip": catWrite, "gzip": catWrite, "gunzip": catWrite,
	// read
	"ls": catRead, "cat": catRead, "head": catRead, "tail": catRead, "less": catRead, "more": catRead,
	"grep": catRead, "egrep": catRead, "fgrep": catRead, "rg": catRead, "ag": catRead, "find": catRead,
	"fd": catRead, "wc": catRead, "sort": catRead, "uniq": catRead, "cut": catRead, "tr": catRead,
	"diff": catRead, "file": catRead, "stat": catRead, "du": catRead, "df": catRead, "pwd": catRead,
	"echo": catRead, "printf": catRead, "which": catRead, "type": catRead, "id": catRead,
	"whoami": catRead, "date": catRead, "uname": catRead, "tree": catRead, "jq": catRead,
	"awk": catRead, "gawk": catRead, "mawk": catRead, "sed": catRead, "basename": catRead,
	"dirname": catRead, "realpath": catRead, "readlink": catRead, "cmp": catRead, "md5sum": catRead,
	"sha1sum": catRead, "sha256sum": catRead, "test": catRead, "[": catRead, "true": catRead,
	"false": catRead, "cd": catRead, "nl": catRead, "od": catRead, "xxd": catRead, "hexdump": catRead,
	"column": catRead, "comm": catRead, "join": catRead, "paste": catRead, "fold": catRead,
	"fmt": catRead, "rev": catRead, "tac": catRead, "strings": catRead, "env": catRead,
	"printenv": catRead, "hostname": catRead, "ps": catRead, "top": catRead, "free": catRead,
	"uptime": catRead, "seq": catRead, "sleep": catRead, "yes": catRead, "expr": catRead,
	"bat": catRead, "view": catRead, "pushd": catRead, "popd": catRead, "dirs": catRead,
}

// programCategories returns the categories of a plain program start.
func programCategories(base string) uint8 {
	return catExecute | programCats[base]
}
