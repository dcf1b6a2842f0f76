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
// names, so building an Item allocates nothing for its categories. A
// literal (static data, nothing built at start); TestCatSlices checks it
// against catNames.
var catSlices = [32][]string{
	nil,                                                    // 0
	{"read"},                                               // 1
	{"write"},                                              // 2
	{"read", "write"},                                      // 3
	{"execute"},                                            // 4
	{"read", "execute"},                                    // 5
	{"write", "execute"},                                   // 6
	{"read", "write", "execute"},                           // 7
	{"network"},                                            // 8
	{"read", "network"},                                    // 9
	{"write", "network"},                                   // 10
	{"read", "write", "network"},                           // 11
	{"execute", "network"},                                 // 12
	{"read", "execute", "network"},                         // 13
	{"write", "execute", "network"},                        // 14
	{"read", "write", "execute", "network"},                // 15
	{"destructive"},                                        // 16
	{"read", "destructive"},                                // 17
	{"write", "destructive"},                               // 18
	{"read", "write", "destructive"},                       // 19
	{"execute", "destructive"},                             // 20
	{"read", "execute", "destructive"},                     // 21
	{"write", "execute", "destructive"},                    // 22
	{"read", "write", "execute", "destructive"},            // 23
	{"network", "destructive"},                             // 24
	{"read", "network", "destructive"},                     // 25
	{"write", "network", "destructive"},                    // 26
	{"read", "write", "network", "destructive"},            // 27
	{"execute", "network", "destructive"},                  // 28
	{"read", "execute", "network", "destructive"},          // 29
	{"write", "execute", "network", "destructive"},         // 30
	{"read", "write", "execute", "network", "destructive"}, // 31
}

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
