//go:build linux

package identity

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/internal/programs"
)

// policedPrograms returns the program names whose binaries the default
// Identifier looks up at startup (programs.Policed in the program table): a
// copy, hardlink, symlink, rename or memfd copy of any of them is identified
// as that program. The first name found for a file is its canonical name
// (e.g. /bin/sh -> dash is known as "sh" and "dash"; argv[0] picks between
// names of the same file).
func policedPrograms() []string { policedOnce.Do(loadPoliced); return policedList }

// policedOnce, policedList and policedSet hold policedPrograms and the same
// names as a set (for IsPoliced), made from the program table on first use
// rather than at start.
var (
	policedOnce sync.Once
	policedList []string
	policedSet  map[string]bool
)

func loadPoliced() {
	policedList = programs.Names(programs.Policed)
	policedSet = make(map[string]bool, len(policedList))
	for _, n := range policedList {
		policedSet[n] = true
	}
}

// multicall reports whether a program decides what to run from argv[0]
// (busybox-style). Its identity is argv[0]'s base name, never the file's:
// busybox run as "rm" is rm. Only binaries identified as one of these get
// that treatment, so an ordinary program renamed "rm" is not trusted to be rm.
func multicall(name string) bool { return programs.Is(name, programs.Multicall) }

// LoaderGlobs find the dynamic loader: running it directly
// (`ld.so /path/to/git push`) loads a program the kernel never exec'd, so
// the loader has an identity of its own ("ld.so") for the policy to refuse.
var LoaderGlobs = []string{"/lib64/ld-linux-*.so*", "/lib/ld-linux*.so*", "/lib/*-linux-gnu*/ld-linux*.so*", "/usr/lib/*-linux-gnu*/ld-linux*.so*", "/lib/ld-musl-*.so*"}

// LoaderName is the identity of the dynamic loader run as a program.
const LoaderName = "ld.so"

// Identity says what a program is.
type Identity struct {
	// Name is the program's identity: a policed program's name when the file
	// is (a copy of) one, otherwise the executable's base name.
	Name string
	// Known is true when the file matched a policed binary.
	Known bool
	// Via says how: "file" (same device/inode: the binary itself, a
	// hardlink or symlink), "content" (same SHA-256: a copy or memfd copy),
	// "build-id" (same ELF build ID: a modified copy, e.g. bytes appended),
	// or "name" (unknown file, base name used).
	Via string
	// Multicall is set for busybox-style binaries; Name is then argv[0]'s
	// base name (or the binary's own name when argv[0] names it).
	Multicall bool
	// SHA256 is the content hash (hex) when it was computed.
	SHA256 string
}

// fileKey identifies one version of one file: a rewrite in place changes
// mtime/ctime/size, a replacement changes the inode.
type fileKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

type knownBin struct {
	names []string
	path  string
	key   fileKey
	once  sync.Once
	hash  [32]byte
	bid   string
	err   error
}

type fileIdent struct {
	bin  *knownBin // nil: unknown file
	via  string
	hash string
}

// Identifier names programs by what they are. It is safe for concurrent use.
// Lookups cost one fstat for a file seen before (results are cached by
// device, inode, size, mtime and ctime); a new file costs at most a hash
// when its size equals a policed binary's, and an ELF note read.
type Identifier struct {
	mu      sync.Mutex
	byFile  map[[2]uint64]*knownBin
	bySize  map[int64][]*knownBin
	byBID   map[string]*knownBin
	bins    []*knownBin
	bidOnce sync.Once
	cache   map[fileKey]fileIdent
	// loaderStandIn names a loader recognised by structure when none was
	// found on the system (see loaderBin).
	loaderStandIn *knownBin
	// dirs are the directories the scan read (identitycache.go); cachePath
	// and cacheKey say where to keep the scan once its build IDs are read.
	dirs                []cacheDir
	cachePath, cacheKey string
}

var (
	defaultIDOnce sync.Once
	defaultID     *Identifier
)

// DefaultIdentifier returns the process-wide Identifier for policedPrograms,
// built on first use from the binaries found in $PATH, the standard bin
// directories and git's exec path (/usr/lib/git-core, /usr/libexec/git-core).
func DefaultIdentifier() *Identifier {
	defaultIDOnce.Do(func() {
		dirs := filepath.SplitList(os.Getenv("PATH"))
		dirs = append(dirs, "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
			"/usr/lib/git-core", "/usr/libexec/git-core")
		path, key := identityCachePath(), identityKey(policedPrograms(), dirs)
		if id := loadIdentityCache(path, key); id != nil {
			defaultID = id
			return
		}
		defaultID = newIdentifier(policedPrograms(), dirs)
		defaultID.cachePath, defaultID.cacheKey = path, key
	})
	return defaultID
}

// newIdentifier builds an Identifier for the given program names, looked up
// (symlinks followed) in dirs; versioned interpreters (python3.12, ...) are
// found by glob. Names not present on the system are simply not known.
func newIdentifier(names, dirs []string) *Identifier {
	id := &Identifier{
		byFile: map[[2]uint64]*knownBin{},
		bySize: map[int64][]*knownBin{},
		byBID:  map[string]*knownBin{},
		cache:  map[fileKey]fileIdent{},
	}
	// Each directory is listed once (not one stat per name and a glob per
	// versioned interpreter: that cost ~20 ms per run on a typical $PATH),
	// and a directory reached twice ($PATH repeats, /bin -> /usr/bin) is
	// scanned once. The order of adds is the same as a stat per name in
	// dirs order, so canonical names do not change.
	type dirList struct {
		dir   string
		names map[string]bool
	}
	var lists []dirList
	seen := map[[2]uint64]bool{}
	wanted := make(map[string]bool, len(names))
	for _, n := range names {
		wanted[n] = true
	}
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		ents, ok := readDirOnce(d, seen)
		id.stamp(d)
		if !ok {
			continue
		}
		if ents == nil {
			// Searchable but not listable: look each name up instead.
			lists = append(lists, dirList{dir: d})
			continue
		}
		// Keep only the entries that can matter (a wanted name or a
		// versioned spelling): /usr/bin alone has ~1000 entries.
		m := map[string]bool{}
		for _, e := range ents {
			if wanted[e] || versionedName(e) {
				m[e] = true
			}
		}
		lists = append(lists, dirList{dir: d, names: m})
	}
	for _, n := range names {
		versioned := versionedProgram(n)
		for _, l := range lists {
			if l.names == nil {
				id.add(n, filepath.Join(l.dir, n))
				if versioned {
					ms, _ := filepath.Glob(filepath.Join(l.dir, n+"[0-9.]*"))
					for _, m := range ms {
						id.add(n, m)
					}
				}
				continue
			}
			if l.names[n] {
				id.add(n, filepath.Join(l.dir, n))
			}
			if versioned {
				// The entries matching n[0-9.]*, in sorted order (as Glob).
				var ms []string
				for e := range l.names {
					if spellsVersionOf(e, n) {
						ms = append(ms, e)
					}
				}
				sort.Strings(ms)
				for _, m := range ms {
					id.add(n, filepath.Join(l.dir, m))
				}
			}
		}
	}
	// The loader globs: each directory they name is listed once (the
	// multiarch library directory has ~1000 entries and is reached as both
	// /lib/... and /usr/lib/...).
	seenLib := map[[2]uint64]bool{}
	for _, g := range LoaderGlobs {
		pat := filepath.Dir(g)
		if strings.ContainsAny(pat, "*?[") {
			id.stamp(filepath.Dir(pat)) // listed by Glob
		}
		dirs, _ := filepath.Glob(pat)
		for _, d := range dirs {
			id.stamp(d)
			ents, _ := readDirOnce(d, seenLib)
			for _, e := range ents {
				if ok, _ := filepath.Match(filepath.Base(g), e); ok {
					id.add(LoaderName, filepath.Join(d, e))
				}
			}
		}
	}
	return id
}

// spellsVersionOf reports whether file name e is n followed by a version
// (n[0-9.]*: python2, python3.11 for python): the files the scan gives a
// versionedProgram's name besides n itself.
func spellsVersionOf(e, n string) bool {
	rest, ok := strings.CutPrefix(e, n)
	return ok && rest != "" && (rest[0] == '.' || rest[0] >= '0' && rest[0] <= '9')
}

// versionedProgram reports whether n is an interpreter also installed as
// n followed by a version (python3.12, perl5.36).
func versionedProgram(n string) bool { return programs.Is(n, programs.Versioned) }

// versionedName reports whether e is a versioned spelling (n[0-9.]*) of
// a versionedProgram n.
func versionedName(e string) bool { return programs.VersionedSpelling(e) }

// readDirOnce lists directory d (names, unsorted). ok is false when d is
// not a directory or a directory with the same device and inode is in seen
// already; names is nil when d cannot be listed.
func readDirOnce(d string, seen map[[2]uint64]bool) (names []string, ok bool) {
	var st unix.Stat_t
	if unix.Stat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, false
	}
	k := [2]uint64{st.Dev, st.Ino}
	if seen[k] {
		return nil, false
	}
	seen[k] = true
	f, err := os.Open(d)
	if err != nil {
		return nil, true
	}
	defer f.Close()
	ents, err := f.Readdirnames(-1)
	if err != nil {
		return nil, true
	}
	return ents, true
}

// stamp records a directory the scan read (or found missing): the cache
// of the scan is valid while none of them changes.
func (id *Identifier) stamp(d string) {
	for _, have := range id.dirs {
		if have.Path == d {
			return
		}
	}
	st, ok := dirStamp(d)
	if !ok {
		st = cacheDir{Path: d}
	}
	id.dirs = append(id.dirs, st)
}

func (id *Identifier) add(name, path string) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return
	}
	k := keyOf(&st)
	fk := [2]uint64{k.dev, k.ino}
	if b := id.byFile[fk]; b != nil {
		for _, have := range b.names {
			if have == name {
				return
			}
		}
		b.names = append(b.names, name)
		return
	}
	b := &knownBin{names: []string{name}, path: path, key: k}
	id.byFile[fk] = b
	id.bySize[k.size] = append(id.bySize[k.size], b)
	id.bins = append(id.bins, b)
}

func keyOf(st *unix.Stat_t) fileKey {
	return fileKey{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// KnownNames lists the policed program names found on this system.
func (id *Identifier) KnownNames() []string {
	var out []string
	for _, b := range id.bins {
		out = append(out, b.names...)
	}
	return out
}

// knows reports whether a binary for name was found.
func (id *Identifier) knows(name string) bool {
	for _, b := range id.bins {
		for _, n := range b.names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// IdentifyProc identifies the executable of process pid, stopped (so
// /proc/PID/exe is stable), with /proc/PID open as dfd (the supervisor has
// it open already at an exec stop); exe is its readlink, argv its
// arguments.
func (id *Identifier) IdentifyProc(dfd, pid int, exe string, argv []string) (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, "exe", &st, 0); err == nil {
		id.mu.Lock()
		fi, ok := id.cache[keyOf(&st)]
		id.mu.Unlock()
		if ok {
			return fi.identity(exe, argv), nil
		}
	}
	fd, err := unix.Openat(dfd, "exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Identity{}, fmt.Errorf("open /proc/%d/exe: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), exe)
	defer f.Close()
	return id.identify(f, exe, argv)
}

// IdentifyFile identifies the executable at path as if run with argv.
func (id *Identifier) IdentifyFile(path string, argv []string) (Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return Identity{}, err
	}
	defer f.Close()
	return id.identify(f, path, argv)
}

func (id *Identifier) identify(f *os.File, exe string, argv []string) (Identity, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Identity{}, fmt.Errorf("fstat %s: %w", exe, err)
	}
	k := keyOf(&st)
	id.mu.Lock()
	fi, ok := id.cache[k]
	id.mu.Unlock()
	if !ok {
		var err error
		fi, err = id.classify(f, k)
		if err != nil {
			return Identity{}, fmt.Errorf("identify %s: %w", exe, err)
		}
		id.mu.Lock()
		if len(id.cache) > 4096 {
			clear(id.cache)
		}
		id.cache[k] = fi
		id.mu.Unlock()
	}
	return fi.identity(exe, argv), nil
}

func (fi fileIdent) identity(exe string, argv []string) Identity {
	if fi.bin == nil {
		return Identity{Name: ExeBase(exe), Via: "name", SHA256: fi.hash}
	}
	arg0 := ""
	if len(argv) > 0 {
		arg0 = filepath.Base(argv[0])
	}
	out := Identity{Name: fi.bin.names[0], Known: true, Via: fi.via, SHA256: fi.hash}
	for _, n := range fi.bin.names {
		if multicall(n) {
			out.Multicall = true
			out.Name = n
			if arg0 != "" && !multicall(arg0) {
				out.Name = arg0
			}
			return out
		}
	}
	for _, n := range fi.bin.names {
		if n == arg0 {
			out.Name = n
		}
	}
	return out
}

// classify matches an open file against the policed binaries.
func (id *Identifier) classify(f *os.File, k fileKey) (fileIdent, error) {
	if b := id.byFile[[2]uint64{k.dev, k.ino}]; b != nil {
		return fileIdent{bin: b, via: "file"}, nil
	}
	var hash string
	if cands := id.bySize[k.size]; len(cands) > 0 {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, k.size)); err != nil {
			return fileIdent{}, fmt.Errorf("hash: %w", err)
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		hash = fmt.Sprintf("%x", sum)
		for _, b := range cands {
			b.load()
			if b.err == nil && b.hash == sum {
				return fileIdent{bin: b, via: "content", hash: hash}, nil
			}
		}
	}
	if bid := BuildID(f); bid != "" {
		id.loadBuildIDs()
		id.mu.Lock()
		b := id.byBID[bid]
		id.mu.Unlock()
		if b != nil {
			return fileIdent{bin: b, via: "build-id", hash: hash}, nil
		}
	}
	if isDynamicLoader(f) {
		return fileIdent{bin: id.loaderBin(), via: "elf", hash: hash}, nil
	}
	return fileIdent{hash: hash}, nil
}

// isDynamicLoader recognises a dynamic loader by its ELF structure, not its
// bytes or name: a position-independent object (ET_DYN) that has no
// interpreter of its own (it is the interpreter) and names itself a loader
// in its dynamic section (DT_SONAME ld-linux*.so*, ld-musl-*.so*,
// ld64.so*, ld.so*). A copy with its build id patched and bytes appended is
// still one. What this cannot catch is the residual class
// docs/threat-model.md names: a loader the agent writes or rewrites itself
// (its SONAME changed) is native code of the agent's, held by the kernel
// boundary, not by the exec policy.
func isDynamicLoader(r io.ReaderAt) bool {
	ef, err := elf.NewFile(r)
	if err != nil {
		return false
	}
	defer ef.Close()
	if ef.Type != elf.ET_DYN {
		return false
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	names, err := ef.DynString(elf.DT_SONAME)
	if err != nil {
		return false
	}
	for _, n := range names {
		if strings.HasPrefix(n, "ld-linux") || strings.HasPrefix(n, "ld-musl") || strings.HasPrefix(n, "ld64.so") || strings.HasPrefix(n, "ld.so") {
			return true
		}
	}
	return false
}

// loaderBin is the known binary entry of the dynamic loader (one found on
// this system, or a stand-in when none was).
func (id *Identifier) loaderBin() *knownBin {
	id.mu.Lock()
	defer id.mu.Unlock()
	for _, b := range id.bins {
		if len(b.names) > 0 && b.names[0] == LoaderName {
			return b
		}
	}
	if id.loaderStandIn == nil {
		id.loaderStandIn = &knownBin{names: []string{LoaderName}}
	}
	return id.loaderStandIn
}

// load hashes a known binary once.
func (b *knownBin) load() {
	b.once.Do(func() {
		f, err := os.Open(b.path)
		if err != nil {
			b.err = err
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			b.err = err
			return
		}
		copy(b.hash[:], h.Sum(nil))
		b.bid = BuildID(f)
	})
}

// loadBuildIDs indexes the build IDs of the policed binaries, once; a
// concurrent caller waits for the index (a caller must never see it half
// built: a modified copy of git would pass as an unknown program).
func (id *Identifier) loadBuildIDs() {
	id.bidOnce.Do(func() {
		m := map[string]*knownBin{}
		for _, b := range id.bins {
			f, err := os.Open(b.path)
			if err != nil {
				continue
			}
			if bid := BuildID(f); bid != "" {
				if _, dup := m[bid]; !dup {
					m[bid] = b
				}
			}
			f.Close()
		}
		id.mu.Lock()
		id.byBID = m
		id.mu.Unlock()
		saveIdentityCache(id, id.cachePath, id.cacheKey)
	})
}

// PrewarmIdentity builds the default Identifier and its build-ID index
// now, so the first exec decision does not wait ~3 ms for it. `agentbox
// run` calls it in the background while it loads the policy (Supervise
// does too, in case nobody did); it is built once per process.
func PrewarmIdentity() {
	DefaultIdentifier().loadBuildIDs()
}

// BuildID returns the hex GNU build ID of an ELF file, or "". It reads only
// the ELF header, the program headers and the PT_NOTE segments (a few
// small preads; debug/elf would also parse every section header).
func BuildID(r io.ReaderAt) string {
	var hdr [64]byte
	if n, _ := r.ReadAt(hdr[:], 0); n < 52 || string(hdr[:4]) != elf.ELFMAG {
		return ""
	}
	var bo binary.ByteOrder
	switch elf.Data(hdr[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return ""
	}
	var phoff uint64
	var phentsize, phnum int
	is64 := elf.Class(hdr[elf.EI_CLASS]) == elf.ELFCLASS64
	switch {
	case is64:
		phoff = bo.Uint64(hdr[32:40])
		phentsize, phnum = int(bo.Uint16(hdr[54:56])), int(bo.Uint16(hdr[56:58]))
		if phentsize < 56 {
			return ""
		}
	case elf.Class(hdr[elf.EI_CLASS]) == elf.ELFCLASS32:
		phoff = uint64(bo.Uint32(hdr[28:32]))
		phentsize, phnum = int(bo.Uint16(hdr[42:44])), int(bo.Uint16(hdr[44:46]))
		if phentsize < 32 {
			return ""
		}
	default:
		return ""
	}
	if phnum == 0 || phnum > 256 || phoff > 1<<32 {
		return ""
	}
	ph := make([]byte, phentsize*phnum)
	if n, _ := r.ReadAt(ph, int64(phoff)); n != len(ph) {
		return ""
	}
	for i := 0; i < phnum; i++ {
		p := ph[i*phentsize:]
		var off, size uint64
		if bo.Uint32(p[0:4]) != uint32(elf.PT_NOTE) {
			continue
		}
		if is64 {
			off, size = bo.Uint64(p[8:16]), bo.Uint64(p[32:40])
		} else {
			off, size = uint64(bo.Uint32(p[4:8])), uint64(bo.Uint32(p[16:20]))
		}
		if size == 0 || size > 1<<16 || off > 1<<40 {
			continue
		}
		data := make([]byte, size)
		if n, _ := r.ReadAt(data, int64(off)); uint64(n) != size {
			continue
		}
		if bid := parseBuildIDNote(data, bo); bid != "" {
			return bid
		}
	}
	return ""
}

// parseBuildIDNote scans ELF notes for NT_GNU_BUILD_ID.
func parseBuildIDNote(data []byte, bo binary.ByteOrder) string {
	for len(data) >= 12 {
		namesz := int(bo.Uint32(data[0:4]))
		descsz := int(bo.Uint32(data[4:8]))
		typ := bo.Uint32(data[8:12])
		data = data[12:]
		na := (namesz + 3) &^ 3
		da := (descsz + 3) &^ 3
		if namesz < 0 || descsz < 0 || na > len(data) || na+da > len(data) {
			return ""
		}
		name := data[:namesz]
		desc := data[na : na+descsz]
		data = data[na+da:]
		if typ == 3 && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) && descsz >= 8 {
			return fmt.Sprintf("%x", desc)
		}
	}
	return ""
}

// ProgramArgv rewrites argv for the policy engine: argv[0] becomes the
// identity name, so the engine's rules for "git" apply to a renamed copy of
// git. For a multicall binary run under its own name (`busybox rm -rf x`) the
// applet is shifted into place ("rm -rf x"). git's own dashed form
// (`git-push ...`, `git-receive-pack ...`, which git runs as the builtin after
// "git-") becomes `git push ...`.
func ProgramArgv(id Identity, argv []string) []string {
	out := make([]string, 0, len(argv)+1)
	if len(argv) == 0 {
		return append(out, id.Name)
	}
	if id.Multicall && multicall(id.Name) && len(argv) > 1 {
		return append(append(out, filepath.Base(argv[1])), argv[2:]...)
	}
	if id.Name == "git" {
		if sub, ok := strings.CutPrefix(filepath.Base(argv[0]), "git-"); ok && sub != "" {
			out = append(out, "git", sub)
			return append(out, argv[1:]...)
		}
	}
	out = append(out, id.Name)
	return append(out, argv[1:]...)
}

// policedNames reports whether name is in policedPrograms.
func policedNames(name string) bool { policedOnce.Do(loadPoliced); return policedSet[name] }

// IsPoliced reports whether an identity name is a policed program's
// (Identifier names every copy of a policed binary by one of these; a
// versioned interpreter such as python3.12 counts too).
func IsPoliced(name string) bool {
	if policedNames(name) || multicall(name) || name == LoaderName {
		return true
	}
	if c, k := programs.Canonical(name); c != name && k&programs.Policed != 0 {
		return true
	}
	return DefaultIdentifier().knows(name)
}

// IsMulticall reports whether an identity name is a multi-call binary's
// (busybox-style: what runs is argv[1]'s base name when run by its own name).
func IsMulticall(name string) bool { return multicall(name) }

// exeBase is the base name of an /proc/PID/exe link ("(deleted)" stripped).
// ExeBase is the base name of an executable path as /proc/PID/exe shows
// it (a " (deleted)" suffix dropped).
func ExeBase(exe string) string {
	exe = strings.TrimSuffix(exe, " (deleted)")
	return filepath.Base(exe)
}
