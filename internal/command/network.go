package command

import (
	"path"
	"strings"
)

// urlFile is the file name a download of u is saved as by default.
func urlFile(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	slash := strings.IndexByte(u, '/')
	if slash < 0 {
		return "index.html"
	}
	name := path.Base(u[slash:])
	if name == "/" || name == "." || name == "" {
		return "index.html"
	}
	return name
}

// hCurl: curl -o FILE, -O (file named after the URL), -D/-c/--trace FILE
// and friends are writes.
func hCurl(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("curl"), false)
	var outs []string
	remoteName := false
	outDir := ""
	var urls []string
	fileOpts := map[string]bool{"output": true, "dump-header": true, "cookie-jar": true, "trace": true,
		"trace-ascii": true, "stderr": true, "libcurl": true, "etag-save": true, "hsts": true, "alt-svc": true}
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			if name == "remote-name" || name == "remote-name-all" {
				remoteName = true
				continue
			}
			if fileOpts[name] || name == "output-dir" || name == "config" {
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				if name == "output-dir" {
					outDir = v
				} else if name != "config" {
					outs = append(outs, v)
				}
			}
		case len(s) > 1 && s[0] == '-':
			for j := 1; j < len(s); j++ {
				c := s[j]
				if c == 'O' {
					remoteName = true
					continue
				}
				if strings.IndexByte(curlArgLetters, c) >= 0 {
					v := s[j+1:]
					if v == "" && i+1 < w.len() {
						i++
						v = w.s[i]
					}
					if c == 'o' || c == 'D' || c == 'c' {
						outs = append(outs, v)
					}
					break
				}
			}
		default:
			urls = append(urls, s)
		}
	}
	for _, o := range outs {
		if o == "-" || o == "%" {
			continue
		}
		if outDir != "" && !path.IsAbs(o) {
			o = path.Join(outDir, o)
		}
		a.pathItem("create_file", o, false, cwd)
	}
	if remoteName {
		for _, u := range urls {
			o := urlFile(u)
			if outDir != "" {
				o = path.Join(outDir, o)
			}
			a.pathItem("create_file", o, false, cwd)
		}
	}
}

// hWget: wget saves to -O FILE, or to a file named after each URL (under
// -P DIR); -o/-a FILE are log files.
func hWget(a *analyzer, w words, cwd string, depth int) {
	a.execItem(w, programCategories("wget"), false)
	var outs []string
	docOut := ""
	prefix := ""
	recursive := false
	var urls []string
	for i := 1; i < w.len(); i++ {
		s := w.s[i]
		if w.flagged(i) {
			continue
		}
		switch {
		case strings.HasPrefix(s, "--"):
			name, v, has := strings.Cut(s[2:], "=")
			switch name {
			case "output-document", "output-file", "append-output", "directory-prefix":
				if !has && i+1 < w.len() {
					i++
					v = w.s[i]
				}
				switch name {
				case "output-document":
					docOut = v
				case "directory-prefix":
					prefix = v
				default:
					outs = append(outs, v)
				}
			case "recursive", "mirror":
				recursive = true
			}
		case strings.HasPrefix(s, "-n"):
		case len(s) > 1 && s[0] == '-':
			for j := 1; j < len(s); j++ {
				c := s[j]
				if c == 'r' || c == 'm' {
					recursive = true
				}
				if strings.IndexByte(wgetArgLetters, c) >= 0 {
					v := s[j+1:]
					if v == "" && i+1 < w.len() {
						i++
						v = w.s[i]
					}
					switch c {
					case 'O':
						docOut = v
					case 'P':
						prefix = v
					case 'o', 'a':
						outs = append(outs, v)
					}
					break
				}
			}
		default:
			urls = append(urls, s)
		}
	}
	for _, o := range outs {
		a.pathItem("create_file", o, false, cwd)
	}
	join := func(o string) string {
		if prefix != "" && !path.IsAbs(o) {
			return path.Join(prefix, o)
		}
		return o
	}
	switch {
	case docOut == "-":
	case docOut != "":
		a.pathItem("create_file", join(docOut), false, cwd)
	default:
		for _, u := range urls {
			o := urlFile(u)
			if recursive {
				host := u
				if i := strings.Index(host, "://"); i >= 0 {
					host = host[i+3:]
				}
				if i := strings.IndexAny(host, "/?#"); i >= 0 {
					host = host[:i]
				}
				o = host
			}
			a.pathItem("create_file", join(o), false, cwd)
		}
	}
}
