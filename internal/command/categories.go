package command

import "github.com/agentbox/agentbox/internal/programs"

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

// programCategories returns the categories of a plain program start, from
// the program table (internal/programs): "execute" for every program start,
// plus what the program's kinds imply. Option-dependent categories (sed -i,
// find -delete, sort -o) are added by the tool handlers.
func programCategories(base string) uint8 {
	k := programs.Lookup(base)
	c := catExecute
	if k&(programs.ReadOnly|programs.Reads) != 0 {
		c |= catRead
	}
	if k&(programs.Writes|programs.Deletes) != 0 {
		c |= catWrite
	}
	if k&(programs.Deletes|programs.Signals) != 0 {
		c |= catDestructive
	}
	if k&programs.Network != 0 {
		c |= catNetwork
	}
	return c
}
