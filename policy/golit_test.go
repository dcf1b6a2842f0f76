package policy

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// goLit prints values of this package as Go composite literals that the
// compiler lays out as static data: the generator of roles_gen.go (the
// built-in roles parsed at build time). It lives in a test file because
// only `go generate` (TestBuiltinGenerated -update) runs it.
//
// It refuses what a literal cannot carry faithfully: functions, channels,
// non-nil interfaces, unexported fields of other packages' types, and a
// pointer reached twice (the copy would lose the sharing). The compile
// caches of fullRegex (once, err, re, not) are left out: they fill at
// first use.
type goLit struct {
	pkgPath string
	imports map[string]string // package path -> name used
	seen    map[uintptr]string
	// decls are package-level variables the literals point at: &constant
	// is not Go, and a call such as ptrTo(x) would run at init.
	decls []string
}

func newGoLit() *goLit {
	return &goLit{
		pkgPath: reflect.TypeOf(rule{}).PkgPath(),
		imports: map[string]string{},
		seen:    map[uintptr]string{},
	}
}

// skipField reports the fields left out of literals: caches filled at first
// use.
func skipField(t reflect.Type, name string) bool {
	if t == reflect.TypeOf(fullRegex{}) {
		switch name {
		case "once", "err", "re", "not":
			return true
		}
	}
	return false
}

// typeName is t as written in this package.
func (g *goLit) typeName(t reflect.Type) (string, error) {
	if t.Name() != "" {
		switch p := t.PkgPath(); p {
		case "", g.pkgPath:
			return t.Name(), nil
		default:
			name := p[strings.LastIndexByte(p, '/')+1:]
			g.imports[p] = name
			return name + "." + t.Name(), nil
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		e, err := g.typeName(t.Elem())
		return "*" + e, err
	case reflect.Slice:
		e, err := g.typeName(t.Elem())
		return "[]" + e, err
	case reflect.Array:
		e, err := g.typeName(t.Elem())
		return "[" + strconv.Itoa(t.Len()) + "]" + e, err
	case reflect.Map:
		k, err := g.typeName(t.Key())
		if err != nil {
			return "", err
		}
		v, err := g.typeName(t.Elem())
		return "map[" + k + "]" + v, err
	}
	return "", fmt.Errorf("cannot name type %s", t)
}

// lit appends v's literal to b; at names the value in errors.
func (g *goLit) lit(b *strings.Builder, v reflect.Value, at string) error {
	t := v.Type()
	named := t.Name() != "" && t.PkgPath() != ""
	conv := func(s string) error { // a constant of a named basic type
		if !named {
			b.WriteString(s)
			return nil
		}
		n, err := g.typeName(t)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "%s(%s)", n, s)
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return conv(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return conv(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return conv(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("%s: float %v has no literal", at, f)
		}
		return conv(strconv.FormatFloat(f, 'g', -1, 64))
	case reflect.String:
		return conv(strconv.Quote(v.String()))
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return nil
		}
		if prev, ok := g.seen[v.Pointer()]; ok {
			return fmt.Errorf("%s: pointer shared with %s", at, prev)
		}
		g.seen[v.Pointer()] = at
		if t.Elem().Kind() != reflect.Struct {
			var eb strings.Builder
			if err := g.lit(&eb, v.Elem(), at); err != nil {
				return err
			}
			name := fmt.Sprintf("genV%d", len(g.decls))
			g.decls = append(g.decls, fmt.Sprintf("%s = %s", name, eb.String()))
			b.WriteString("&" + name)
			return nil
		}
		b.WriteString("&")
		return g.lit(b, v.Elem(), at)
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return nil
		}
		n, err := g.typeName(t)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		// Elements that are structures go one to a line.
		sep, end := ", ", "}"
		if k := t.Elem().Kind(); k == reflect.Struct || k == reflect.Pointer {
			sep, end = ",\n", ",\n}"
			b.WriteString(n + "{\n")
		} else {
			b.WriteString(n + "{")
		}
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b.WriteString(sep)
			}
			if err := g.lit(b, v.Index(i), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		if v.Len() == 0 {
			end = "}"
		}
		b.WriteString(end)
		return nil
	case reflect.Map:
		if v.IsNil() {
			b.WriteString("nil")
			return nil
		}
		n, err := g.typeName(t)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		keys := v.MapKeys()
		ks := make([]string, len(keys))
		for i, k := range keys {
			var kb strings.Builder
			if err := g.lit(&kb, k, at+"[key]"); err != nil {
				return err
			}
			ks[i] = kb.String()
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, c int) bool { return ks[idx[a]] < ks[idx[c]] })
		b.WriteString(n + "{")
		for j, i := range idx {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(ks[i] + ": ")
			if err := g.lit(b, v.MapIndex(keys[i]), at+"["+ks[i]+"]"); err != nil {
				return err
			}
		}
		b.WriteString("}")
		return nil
	case reflect.Struct:
		n, err := g.typeName(t)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if t.PkgPath() != g.pkgPath && t.PkgPath() != "" {
			for i := 0; i < t.NumField(); i++ {
				if !t.Field(i).IsExported() && !v.Field(i).IsZero() {
					return fmt.Errorf("%s: %s has unexported field %s", at, n, t.Field(i).Name)
				}
			}
		}
		b.WriteString(n + "{")
		first := true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			fv := v.Field(i)
			if skipField(t, f.Name) || fv.IsZero() {
				continue
			}
			if f.Type == reflect.TypeOf(sync.Once{}) {
				return fmt.Errorf("%s.%s: a sync.Once that has run", at, f.Name)
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(f.Name + ": ")
			if err := g.lit(b, fv, at+"."+f.Name); err != nil {
				return err
			}
		}
		b.WriteString("}")
		return nil
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return nil
		}
	}
	return fmt.Errorf("%s: a %s has no literal", at, t)
}
