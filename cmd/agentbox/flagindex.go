package main

import "github.com/urfave/cli/v3"

// flagReader is what run's option helpers read of a command's flags: a
// *cli.Command's own lookups, or a flagIndex of them (run's, asked ~60
// times per launch).
type flagReader interface {
	Bool(name string) bool
	String(name string) string
	StringSlice(name string) []string
	Int(name string) int
	IsSet(name string) bool
}

// flagIndex answers a command's flag lookups from a map built once. cli's
// own lookup walks the command's lineage and builds each flag's list of
// names at every question: run has ~80 flags and asks ~60 questions per
// launch, ~5000 name lists. The index finds the flag cli would (the
// command's flags, then its mutually exclusive groups, then its parent's,
// the first one with the name) and asks it the same way (Get, IsSet); a
// name it does not hold goes to cli itself.
type flagIndex struct {
	c      *cli.Command
	byName map[string]cli.Flag
}

var _ flagReader = (*cli.Command)(nil)

// indexFlags indexes c's flags and its ancestors'.
func indexFlags(c *cli.Command) *flagIndex {
	ix := &flagIndex{c: c, byName: make(map[string]cli.Flag, 128)}
	add := func(f cli.Flag) {
		for _, n := range f.Names() {
			if _, ok := ix.byName[n]; !ok {
				ix.byName[n] = f
			}
		}
	}
	for _, cmd := range c.Lineage() {
		for _, f := range cmd.Flags {
			add(f)
		}
		for _, g := range cmd.MutuallyExclusiveFlags {
			for _, fs := range g.Flags {
				for _, f := range fs {
					add(f)
				}
			}
		}
	}
	return ix
}

// Bool is cli.Command.Bool.
func (ix *flagIndex) Bool(name string) bool {
	f, ok := ix.byName[name]
	if !ok {
		return ix.c.Bool(name)
	}
	v, _ := f.Get().(bool)
	return v
}

// String is cli.Command.String.
func (ix *flagIndex) String(name string) string {
	f, ok := ix.byName[name]
	if !ok {
		return ix.c.String(name)
	}
	v, _ := f.Get().(string)
	return v
}

// StringSlice is cli.Command.StringSlice.
func (ix *flagIndex) StringSlice(name string) []string {
	f, ok := ix.byName[name]
	if !ok {
		return ix.c.StringSlice(name)
	}
	v, _ := f.Get().([]string)
	return v
}

// Int is cli.Command.Int (asked once a launch: cli's own lookup).
func (ix *flagIndex) Int(name string) int { return ix.c.Int(name) }

// IsSet is cli.Command.IsSet.
func (ix *flagIndex) IsSet(name string) bool {
	f, ok := ix.byName[name]
	if !ok {
		return ix.c.IsSet(name)
	}
	return f.IsSet()
}
