package command

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func checkArgv(t *testing.T, cmd, cwd string, want []string) {
	t.Helper()
	argv := strings.Fields(cmd)
	switch {
	case strings.Contains(cmd, "¦"):
		argv = strings.Split(cmd, "¦")
	case strings.Contains(cmd, "|"):
		argv = strings.Split(cmd, "|")
	}
	got := summary(FromArgv(argv, cwd))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromArgv(%q, %q)\n got: %q\nwant: %q", argv, cwd, got, want)
	}
}

func TestFromArgvWrappers(t *testing.T) {
	tests := []struct {
		argv string // fields, or |-separated when words hold blanks
		want []string
	}{
		{"ls -la", []string{"tool:exec:ls -la"}},
		{"/bin/ls -la", []string{"tool:exec:ls -la"}},
		{"env -i -u HOME FOO=1 git push", []string{"tool:exec:env -i -u HOME FOO=1 (w)", "tool:git:push"}},
		{"env|-S|git push|origin", []string{"tool:exec:env -S 'git push' (w)", "tool:git:push origin"}},
		{"env|--split-string=-i git|push", []string{"tool:exec:env '--split-string=-i git' (w)", "tool:git:push"}},
		{"env|-S|FOO='a b' sh -c 'git push'", []string{"tool:exec:env -S 'FOO='\\''a b'\\'' sh -c '\\''git push'\\''' (w)", "tool:exec:sh -c 'git push' (w)", "tool:git:push"}},
		{"env|-S|${CMD} x", []string{"tool:exec:env -S '${CMD} x' [ask]", "tool:exec:${CMD} x [ask]"}},
		{"env -C /w git rm a", []string{"tool:exec:env -C /w (w)", "tool:git:rm a", "tool:delete:/w/a"}},
		{"env --bogus git push", []string{"tool:exec:env --bogus [ask]", "tool:git:push"}},
		{"env", []string{"tool:exec:env"}},
		{"env - git push", []string{"tool:exec:env - (w)", "tool:git:push"}},
		{"env -i - FOO=1 git push", []string{"tool:exec:env -i - FOO=1 (w)", "tool:git:push"}},
		{"eval -- git push", []string{"tool:exec:eval -- git push (w)", "tool:git:push"}},
		{"nice -n 5 git push", []string{"tool:exec:nice -n 5 (w)", "tool:git:push"}},
		{"nice -10 git push", []string{"tool:exec:nice -10 (w)", "tool:git:push"}},
		{"nice --adjustment=3 git push", []string{"tool:exec:nice --adjustment=3 (w)", "tool:git:push"}},
		{"nohup git push", []string{"tool:exec:nohup (w)", "tool:git:push"}},
		{"timeout 10 git push", []string{"tool:exec:timeout 10 (w)", "tool:git:push"}},
		{"timeout -k 5 -s KILL 1m git push", []string{"tool:exec:timeout -k 5 -s KILL 1m (w)", "tool:git:push"}},
		{"timeout --kill 5 --sig=TERM 10 git pull", []string{"tool:exec:timeout --kill 5 --sig=TERM 10 (w)", "tool:git:pull"}},
		{"stdbuf -oL -e0 git push", []string{"tool:exec:stdbuf -oL -e0 (w)", "tool:git:push"}},
		{"time -p -o t.txt git push", []string{"tool:exec:time -p -o t.txt (w)", "tool:git:push", "tool:create_file:t.txt"}},
		{"command git push", []string{"tool:exec:command (w)", "tool:git:push"}},
		{"command -p git push", []string{"tool:exec:command -p (w)", "tool:git:push"}},
		{"command -v git", []string{"tool:exec:command -v git"}},
		{"builtin eval git push", []string{"tool:exec:builtin (w)", "tool:exec:eval git push (w)", "tool:git:push"}},
		{"exec -a x -l git push", []string{"tool:exec:exec -a x -l (w)", "tool:git:push"}},
		{"setsid -f -w git push", []string{"tool:exec:setsid -f -w (w)", "tool:git:push"}},
		{"flock -n /tmp/l git push", []string{"tool:exec:flock -n /tmp/l (w)", "tool:git:push", "tool:create_file:/tmp/l"}},
		{"flock 9 git push", []string{"tool:exec:flock 9 (w)", "tool:git:push"}},
		{"watch -d -n 2 git push origin", []string{"tool:exec:watch -d -n 2 (w)", "tool:git:push origin"}},
		{"sudo git push", []string{"tool:exec:sudo", "tool:git:push"}},
		{"sudo -u root -g wheel -E -- git push", []string{"tool:exec:sudo -u root -g wheel -E --", "tool:git:push"}},
		{"sudo --user=root FOO=1 git push", []string{"tool:exec:sudo --user=root FOO=1", "tool:git:push"}},
		{"sudo -s", []string{"tool:exec:sudo -s [ask]"}},
		{"sudo -e /etc/hosts", []string{"tool:exec:sudo -e /etc/hosts", "tool:create_file:/etc/hosts"}},
		{"sudo -Q git push", []string{"tool:exec:sudo -Q [ask]", "tool:git:push"}},
		{"doas -u root git push", []string{"tool:exec:doas -u root", "tool:git:push"}},
		{"pkexec --user root git push", []string{"tool:exec:pkexec --user root", "tool:git:push"}},
		{"xargs git", []string{"tool:exec:xargs (w)", "tool:git:{args} [ask]"}},
		{"xargs -0 -n1 -P4 rm -f", []string{"tool:exec:xargs -0 -n1 -P4 (w)", "tool:exec:rm -f {args}", "tool:delete:{args}"}},
		{"xargs -I {} git {} origin", []string{"tool:exec:xargs -I '{}' (w)", "tool:git:{} origin [ask]"}},
		{"xargs -i git push {}", []string{"tool:exec:xargs -i (w)", "tool:git:push {}"}},
		{"xargs", []string{"tool:exec:xargs (w)", "tool:exec:echo {args}"}},
		{"ionice -c3 git push", []string{"tool:exec:ionice -c3 (w)", "tool:git:push"}},
		{"ionice -p 42", []string{"tool:exec:ionice -p 42"}},
		{"chrt -f 10 git push", []string{"tool:exec:chrt -f 10 (w)", "tool:git:push"}},
		{"taskset -c 0,1 git push", []string{"tool:exec:taskset -c 0,1 (w)", "tool:git:push"}},
		{"unshare -rn git push", []string{"tool:exec:unshare -rn", "tool:git:push"}},
		{"unshare -r", []string{"tool:exec:unshare -r [ask]"}},
		{"chroot /srv git push", []string{"tool:exec:chroot /srv", "tool:git:push"}},
		{"strace -f -e trace=execve -o s.txt git push", []string{"tool:exec:strace -f -e trace=execve -o s.txt", "tool:git:push", "tool:create_file:s.txt"}},
		{"ltrace -S git push", []string{"tool:exec:ltrace -S", "tool:git:push"}},
		{"gdb --args git push", []string{"tool:exec:gdb --args", "tool:git:push"}},
		{"busybox rm -rf x", []string{"tool:exec:busybox (w)", "tool:exec:rm -rf x", "tool:delete:x"}},
		{"nice timeout 5 env A=1 nohup sudo git push", []string{"tool:exec:nice (w)", "tool:exec:timeout 5 (w)", "tool:exec:env A=1 (w)", "tool:exec:nohup (w)", "tool:exec:sudo", "tool:git:push"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, "", tt.want)
	}
}

func TestFromArgvFindRgXargs(t *testing.T) {
	tests := []struct {
		argv, cwd string
		want      []string
	}{
		{"find . -name x -exec git push ;", "", []string{"tool:exec:find . -name x -exec git push ';'", "tool:git:push"}},
		{"find src -execdir rm {} +", "", []string{"tool:exec:find src -execdir rm '{}' +", "tool:exec:rm {}", "tool:delete:{}"}},
		{"find . -ok git {} ;", "", []string{"tool:exec:find . -ok git '{}' ';'", "tool:git:{} [ask]"}},
		{"find a b -name *.o -delete", "/w", []string{"tool:exec:find a b -name '*.o' -delete", "tool:delete:/w/a", "tool:delete:/w/b"}},
		{"find -delete", "", []string{"tool:exec:find -delete", "tool:delete:."}},
		{"find . -name -exec -exec git push ;", "", []string{"tool:exec:find . -name -exec -exec git push ';'", "tool:git:push"}},
		{"find . -fprint out -fprintf f2 %p -fls f3", "", []string{"tool:exec:find . -fprint out -fprintf f2 %p -fls f3", "tool:create_file:out", "tool:create_file:f2", "tool:create_file:f3"}},
		{"find . -frobnicate", "", []string{"tool:exec:find . -frobnicate [ask]"}},
		{"find¦.¦-exec¦sh¦-c¦git push¦;", "", []string{"tool:exec:find . -exec sh -c 'git push' ';'", "tool:exec:sh -c 'git push' (w)", "tool:git:push"}},
		{"rg --pre ./unzip foo", "", []string{"tool:exec:rg --pre ./unzip foo [aue]", "tool:exec:unzip {file} [aue]"}},
		{"rg --pre=git foo", "", []string{"tool:exec:rg --pre=git foo [aue]", "tool:git:{file} [ask]"}},
		{"rg -n foo --pre-glob *.gz", "", []string{"tool:exec:rg -n foo --pre-glob '*.gz'"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, tt.cwd, tt.want)
	}
}

func TestFromArgvInterpreters(t *testing.T) {
	tests := []struct {
		argv string
		want []string
	}{
		{"python3|-c|import os", []string{"tool:exec:python3 -c 'import os' [aue]"}},
		{"python3.12|-Ic|x", []string{"tool:exec:python3.12 -Ic x [aue]"}},
		{"python|-cimport os", []string{"tool:exec:python '-cimport os' [aue]"}},
		{"python -m pytest -x", []string{"tool:exec:python -m pytest -x", "tool:exec:pytest -x (w)"}},
		{"python3 -mpip install x", []string{"tool:exec:python3 -mpip install x", "tool:exec:pip install x (w)"}},
		{"node /usr/bin/npm publish", []string{"tool:exec:node /usr/bin/npm publish", "tool:exec:npm publish (w)"}},
		{"node ./tool.js", []string{"tool:exec:node ./tool.js", "tool:exec:tool.js (w)"}},
		// a directory operand (node --test DIR, python3 DIR/ running its
		// __main__.py) is named by the directory, never an empty command
		{"node --test test/", []string{"tool:exec:node --test test/", "tool:exec:test (w)"}},
		{"python3 app//", []string{"tool:exec:python3 app//", "tool:exec:app (w)"}},
		{"node /", []string{"tool:exec:node /"}},
		{"python script.py -c x", []string{"tool:exec:python script.py -c x", "tool:exec:script.py -c x (w)"}},
		{"python3", []string{"tool:exec:python3 [aue]"}},
		{"python3 -", []string{"tool:exec:python3 - [aue]"}},
		{"node -e 1", []string{"tool:exec:node -e 1 [aue]"}},
		{"node -pe 1", []string{"tool:exec:node -pe 1 [aue]"}},
		{"node --eval=1", []string{"tool:exec:node --eval=1 [aue]"}},
		{"node -r ts-node/register app.ts", []string{"tool:exec:node -r ts-node/register app.ts", "tool:exec:app.ts (w)"}},
		{"perl -pi -e s/a/b/ f.txt", []string{"tool:exec:perl -pi -e s/a/b/ f.txt [aue]", "tool:create_file:f.txt"}},
		{"perl -ne print", []string{"tool:exec:perl -ne print [aue]"}},
		{"perl -E say", []string{"tool:exec:perl -E say [aue]"}},
		{"perl¦-lane¦print $F[0]¦f", []string{"tool:exec:perl -lane 'print $F[0]' f [aue]"}},
		{"perl¦-l012ne¦print¦f", []string{"tool:exec:perl -l012ne print f [aue]"}},
		{"perl¦-0777¦-ne¦print¦f", []string{"tool:exec:perl -0777 -ne print f [aue]"}},
		{"ruby -lane p", []string{"tool:exec:ruby -lane p [aue]"}},
		{"perl script.pl", []string{"tool:exec:perl script.pl", "tool:exec:script.pl (w)"}},
		{"ruby -e 1", []string{"tool:exec:ruby -e 1 [aue]"}},
		{"php -r echo;", []string{"tool:exec:php -r 'echo;' [aue]"}},
		{"php -f x.php", []string{"tool:exec:php -f x.php", "tool:exec:x.php (w)"}},
		{"lua -e x", []string{"tool:exec:lua -e x [aue]"}},
		{"lua5.4 -e x", []string{"tool:exec:lua5.4 -e x [aue]"}},
		{"deno eval 1", []string{"tool:exec:deno eval 1 [aue]"}},
		{"awk|{print $1}|f", []string{"tool:exec:awk '{print $1}' f"}},
		{"awk|$3 > 100|f", []string{"tool:exec:awk '$3 > 100' f"}},
		{"awk|BEGIN{system(\"id\")}", []string{"tool:exec:awk 'BEGIN{system(\"id\")}' [aue]"}},
		{"gawk|{print > \"out\"}", []string{"tool:exec:gawk '{print > \"out\"}' [aue]"}},
		{"awk¦{print | \"sh\"}", []string{"tool:exec:awk '{print | \"sh\"}' [aue]"}},
		{"awk¦{ \"date\" | getline d }", []string{"tool:exec:awk '{ \"date\" | getline d }' [aue]"}},
		{"awk|{print ($1 > 2)}", []string{"tool:exec:awk '{print ($1 > 2)}'"}},
		{"awk -f prog.awk f", []string{"tool:exec:awk -f prog.awk f [aue]"}},
		{"awk|--sandbox|BEGIN{system(\"id\")}", []string{"tool:exec:awk --sandbox 'BEGIN{system(\"id\")}'"}},
		{"mawk¦-v¦x=1¦BEGIN{ print x |& \"cat\" }", []string{"tool:exec:mawk -v x=1 'BEGIN{ print x |& \"cat\" }' [aue]"}},
		{"sed -n 1,5p f", []string{"tool:exec:sed -n 1,5p f"}},
		{"sed -i s/a/b/ f.txt g.txt", []string{"tool:exec:sed -i s/a/b/ f.txt g.txt", "tool:create_file:f.txt", "tool:create_file:g.txt"}},
		{"sed -ie s/a/b/ f", []string{"tool:exec:sed -ie s/a/b/ f", "tool:create_file:f"}},
		{"sed --in-place=.bak -e s/a/b/ f", []string{"tool:exec:sed --in-place=.bak -e s/a/b/ f", "tool:create_file:f"}},
		{"sed s/x/id/e f", []string{"tool:exec:sed s/x/id/e f [aue]"}},
		{"sed|1e id|f", []string{"tool:exec:sed '1e id' f [aue]"}},
		{"sed|-e|/x/w /tmp/out|f", []string{"tool:exec:sed -e '/x/w /tmp/out' f", "tool:create_file:/tmp/out"}},
		{"sed|s/a/b/w out.txt|f", []string{"tool:exec:sed 's/a/b/w out.txt' f", "tool:create_file:out.txt"}},
		{"sed¦s|a|b|g;y/ab/cd/;/x/,$d¦f", []string{"tool:exec:sed 's|a|b|g;y/ab/cd/;/x/,$d' f"}},
		{"sed|$!N;P;D", []string{"tool:exec:sed '$!N;P;D'"}},
		{"sed|/^#/d; s/\\//-/g|f", []string{"tool:exec:sed '/^#/d; s/\\//-/g' f"}},
		{"sed -f script.sed f", []string{"tool:exec:sed -f script.sed f [aue]"}},
		{"sed|--sandbox|s/x/id/e", []string{"tool:exec:sed --sandbox s/x/id/e"}},
		{"sed|1!G;h;$!d", []string{"tool:exec:sed '1!G;h;$!d'"}},
		{"sed|k", []string{"tool:exec:sed k [aue]"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, "", tt.want)
	}
}

func TestFromArgvPathTools(t *testing.T) {
	tests := []struct {
		argv, cwd string
		want      []string
	}{
		{"rm -rf node_modules /", "", []string{"tool:exec:rm -rf node_modules /", "tool:delete:node_modules", "tool:delete:/"}},
		{"rm -- -f", "/w", []string{"tool:exec:rm -- -f", "tool:delete:/w/-f"}},
		{"rm a/../../etc/x", "/w/target", []string{"tool:exec:rm a/../../etc/x", "tool:delete:/w/etc/x"}},
		{"rmdir -p a/b", "", []string{"tool:exec:rmdir -p a/b", "tool:delete:a/b"}},
		{"unlink f", "", []string{"tool:exec:unlink f", "tool:delete:f"}},
		{"shred -n 3 -u secret", "", []string{"tool:exec:shred -n 3 -u secret", "tool:delete:secret"}},
		{"tee -a log.txt /dev/null", "", []string{"tool:exec:tee -a log.txt /dev/null", "tool:create_file:log.txt"}},
		{"touch -d yesterday a", "", []string{"tool:exec:touch -d yesterday a", "tool:create_file:a"}},
		{"sort -o out.txt in.txt", "", []string{"tool:exec:sort -o out.txt in.txt", "tool:create_file:out.txt"}},
		{"sort -rno out.txt in.txt", "", []string{"tool:exec:sort -rno out.txt in.txt", "tool:create_file:out.txt"}},
		{"sort --output=o -k 2 in", "", []string{"tool:exec:sort --output=o -k 2 in", "tool:create_file:o"}},
		{"sort --compress-program=gzip big", "", []string{"tool:exec:sort --compress-program=gzip big [aue]", "tool:exec:gzip"}},
		{"cp a b", "", []string{"tool:exec:cp a b", "tool:create_file:b"}},
		{"cp -r a b c dir/", "", []string{"tool:exec:cp -r a b c dir/", "tool:create_file:dir/a", "tool:create_file:dir/b", "tool:create_file:dir/c"}},
		{"cp -t /dst x/a", "", []string{"tool:exec:cp -t /dst x/a", "tool:create_file:/dst/a"}},
		{"mv a b", "", []string{"tool:exec:mv a b", "tool:delete:a", "tool:delete:b", "tool:create_file:b"}},
		{"mv -n a b", "", []string{"tool:exec:mv -n a b", "tool:delete:a", "tool:create_file:b"}},
		{"mv --target-directory=d a", "", []string{"tool:exec:mv --target-directory=d a", "tool:delete:a", "tool:create_file:d/a"}},
		{"install -m 755 bin /usr/local/bin/x", "", []string{"tool:exec:install -m 755 bin /usr/local/bin/x", "tool:create_file:/usr/local/bin/x"}},
		{"install -d a b", "", []string{"tool:exec:install -d a b", "tool:create_file:a", "tool:create_file:b"}},
		{"ln -sf x y", "", []string{"tool:exec:ln -sf x y", "tool:create_file:y"}},
		{"ln -s /etc/passwd", "/w", []string{"tool:exec:ln -s /etc/passwd", "tool:create_file:/w/passwd"}},
		{"dd if=/dev/zero of=disk.img bs=1M", "", []string{"tool:exec:dd if=/dev/zero of=disk.img bs=1M", "tool:create_file:disk.img"}},
		{"truncate -s 0 f", "", []string{"tool:exec:truncate -s 0 f", "tool:create_file:f"}},
		{"curl -sSLo out.tgz http://x/y", "", []string{"tool:exec:curl -sSLo out.tgz http://x/y", "tool:create_file:out.tgz"}},
		{"curl --output=o -D h.txt http://x", "", []string{"tool:exec:curl --output=o -D h.txt http://x", "tool:create_file:o", "tool:create_file:h.txt"}},
		{"curl -O http://x/a/b.tar.gz?x=1", "", []string{"tool:exec:curl -O 'http://x/a/b.tar.gz?x=1'", "tool:create_file:b.tar.gz"}},
		{"curl -o - http://x", "", []string{"tool:exec:curl -o - http://x"}},
		{"wget http://x/f.zip", "", []string{"tool:exec:wget http://x/f.zip", "tool:create_file:f.zip"}},
		{"wget -O - http://x", "", []string{"tool:exec:wget -O - http://x"}},
		{"wget -nv -P dl http://x/", "", []string{"tool:exec:wget -nv -P dl http://x/", "tool:create_file:dl/index.html"}},
		{"ssh host git push", "", []string{"tool:exec:ssh host git push"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, tt.cwd, tt.want)
	}
}

func TestFromArgvMoreTools(t *testing.T) {
	tests := []struct {
		argv, cwd string
		want      []string
	}{
		{"tar¦xf¦a.tar¦--to-command=git push", "", []string{"tool:exec:tar xf a.tar '--to-command=git push' [aue]", "tool:git:push"}},
		{"tar¦-xf¦a.tar¦--checkpoint-action=exec=sh -c id", "", []string{"tool:exec:tar -xf a.tar '--checkpoint-action=exec=sh -c id' [aue]", "tool:exec:sh -c id (w)", "tool:exec:id"}},
		{"tar -I zstd -cf a.tar.zst x", "", []string{"tool:exec:tar -I zstd -cf a.tar.zst x", "tool:exec:zstd"}},
		{"tar¦cIf¦sh -c id¦a.tar¦x", "", []string{"tool:exec:tar cIf 'sh -c id' a.tar x", "tool:exec:sh -c id (w)", "tool:exec:id"}},
		{"tar czf a.tgz src", "", []string{"tool:exec:tar czf a.tgz src"}},
		{"fd -e go -x gofmt -l", "", []string{"tool:exec:fd -e go -x gofmt -l", "tool:exec:gofmt -l {}"}},
		{"fd x -X git {/} ;", "", []string{"tool:exec:fd x -X git '{/}' ';'", "tool:git:{/} [ask]"}},
		{"cmake -E env FOO=1 git push", "", []string{"tool:exec:cmake -E env FOO=1 (w)", "tool:git:push"}},
		{"cmake -E chdir /tmp rm -rf x", "", []string{"tool:exec:cmake -E chdir /tmp (w)", "tool:exec:rm -rf x", "tool:delete:/tmp/x"}},
		{"cmake -E rm -rf build", "/w", []string{"tool:exec:cmake -E rm -rf build", "tool:delete:/w/build"}},
		{"cmake -E copy a b dst/", "", []string{"tool:exec:cmake -E copy a b dst/", "tool:create_file:dst/a", "tool:create_file:dst/b"}},
		{"cmake -P x.cmake", "", []string{"tool:exec:cmake -P x.cmake [aue]"}},
		{"cmake --build build -j2", "", []string{"tool:exec:cmake --build build -j2"}},
		{"go¦test¦-exec¦sh -c id¦./...", "", []string{"tool:exec:go test -exec 'sh -c id' ./... [aue]", "tool:exec:sh -c id {args} [aue]", "tool:exec:id [aue]"}},
		{"go build --toolexec=/tmp/x ./...", "", []string{"tool:exec:go build --toolexec=/tmp/x ./... [aue]", "tool:exec:x {args} [aue]"}},
		{"go env -w CC=x", "", []string{"tool:exec:go env -w CC=x [aue]"}},
		{"go test -run TestX ./...", "", []string{"tool:exec:go test -run TestX ./..."}},
		{"less¦+!git push¦f", "", []string{"tool:exec:less '+!git push' f [aue]"}},
		{"less +G -o log.txt f", "", []string{"tool:exec:less +G -o log.txt f", "tool:create_file:log.txt"}},
		{"vim¦-c¦!git push¦f", "", []string{"tool:exec:vim -c '!git push' f [aue]"}},
		{"vim +10 f", "", []string{"tool:exec:vim +10 f"}},
		{"emacs --batch --eval (x)", "", []string{"tool:exec:emacs --batch --eval '(x)' [aue]"}},
		{"make¦--eval=x:; git push¦x", "", []string{"tool:exec:make '--eval=x:; git push' x [aue]"}},
		{"make -f - all", "", []string{"tool:exec:make -f - all [aue]"}},
		{"make -j2 test", "", []string{"tool:exec:make -j2 test"}},
		{"xxd -r hex out.bin", "", []string{"tool:exec:xxd -r hex out.bin", "tool:create_file:out.bin"}},
		{"xxd -c 16 in", "", []string{"tool:exec:xxd -c 16 in"}},
		{"uniq -c in out", "", []string{"tool:exec:uniq -c in out", "tool:create_file:out"}},
		{"tree -o t.txt src", "", []string{"tool:exec:tree -o t.txt src", "tool:create_file:t.txt"}},
		{"gcc -O2 -o /tmp/a.out a.c", "", []string{"tool:exec:gcc -O2 -o /tmp/a.out a.c", "tool:create_file:/tmp/a.out"}},
		{"cc -oa.out a.c", "", []string{"tool:exec:cc -oa.out a.c", "tool:create_file:a.out"}},
		{"gcc -wrapper sh,-c,id a.c", "", []string{"tool:exec:gcc -wrapper sh,-c,id a.c [aue]", "tool:exec:sh -c id {args} [aue]", "tool:exec:id [aue]"}},
		{"go build -o bin/x ./cmd/x", "/w", []string{"tool:exec:go build -o bin/x ./cmd/x", "tool:create_file:/w/bin/x"}},
		{"ag --pager=less foo", "", []string{"tool:exec:ag --pager=less foo [aue]", "tool:exec:less {args} [aue]"}},
		{"zip¦-T¦-TT¦git push¦a.zip¦f", "", []string{"tool:exec:zip -T -TT 'git push' a.zip f [aue]", "tool:git:push"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, tt.cwd, tt.want)
	}
}

func TestFromArgvCategories(t *testing.T) {
	tests := []struct {
		argv string
		want [][]string
	}{
		{"ls", [][]string{{"read", "execute"}}},
		{"curl x", [][]string{{"execute", "network"}}},
		{"ssh h", [][]string{{"execute", "network"}}},
		{"rm x", [][]string{{"write", "execute", "destructive"}, {"write", "destructive"}}},
		{"git push -f", [][]string{{"write", "network", "destructive"}}},
		{"git status", [][]string{{"read"}}},
		{"git frobnicate", [][]string{{"execute"}}},
		{"make", [][]string{{"execute"}}},
		{"find . -delete", [][]string{{"read", "write", "execute", "destructive"}, {"write", "destructive"}}},
	}
	for _, tt := range tests {
		items := FromArgv(strings.Fields(tt.argv), "")
		var got [][]string
		for _, it := range items {
			got = append(got, it.Categories)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FromArgv(%q) categories = %q, want %q", tt.argv, got, tt.want)
		}
	}
}

func TestFromArgvNul(t *testing.T) {
	items := FromArgv([]string{"ls", "a\x00b"}, "")
	if len(items) != 1 || items[0].Floor != FloorDeny {
		t.Fatalf("NUL byte: got %+v, want one FloorDeny item", items)
	}
	if FromArgv(nil, "") != nil {
		t.Error("FromArgv(nil) != nil")
	}
}

func TestFromArgvArgvField(t *testing.T) {
	argv := []string{"/usr/bin/git", "-C", "x", "push"}
	items := FromArgv(argv, "")
	if want := []string{"git", "-C", "x", "push"}; !reflect.DeepEqual(items[0].Argv, want) {
		t.Errorf("git Argv = %q, want %q", items[0].Argv, want)
	}
	if argv[0] != "/usr/bin/git" {
		t.Errorf("FromArgv modified its input: %q", argv)
	}
	items = FromArgv([]string{"timeout", "5", "/bin/ls", "-l"}, "")
	if want := []string{"ls", "-l"}; !reflect.DeepEqual(items[1].Argv, want) {
		t.Errorf("inner Argv = %q, want %q", items[1].Argv, want)
	}
}

func TestParseGit(t *testing.T) {
	tests := []struct {
		argv     string
		sub      string
		args     []string
		keys     []string
		runs     bool
		dirs     []string
		errMatch string
	}{
		{argv: "git status", sub: "status"},
		{argv: "git -C target diff --stat", sub: "diff", args: []string{"--stat"}, dirs: []string{"target"}},
		{argv: "git -C a -C b log", sub: "log", dirs: []string{"a", "b"}},
		{argv: "git -c user.name=x commit", sub: "commit", keys: []string{"user.name"}},
		{argv: "git -c core.sshCommand=evil fetch", sub: "fetch", keys: []string{"core.sshCommand"}, runs: true},
		{argv: "git -ccore.pager=x log", sub: "log", keys: []string{"core.pager"}, runs: true},
		{argv: "git -c alias.st=!id st", sub: "st", keys: []string{"alias.st"}, runs: true},
		{argv: "git -c ALIAS.x=y x", sub: "x", keys: []string{"ALIAS.x"}, runs: true},
		{argv: "git -c core.editor commit", sub: "commit", keys: []string{"core.editor"}, runs: true},
		{argv: "git -c diff.pdf.textconv=x diff", sub: "diff", keys: []string{"diff.pdf.textconv"}, runs: true},
		{argv: "git -c diff.x.command=x diff", sub: "diff", keys: []string{"diff.x.command"}, runs: true},
		{argv: "git -c merge.ours.driver=x merge y", sub: "merge", args: []string{"y"}, keys: []string{"merge.ours.driver"}, runs: true},
		{argv: "git -c filter.lfs.smudge=x checkout", sub: "checkout", keys: []string{"filter.lfs.smudge"}, runs: true},
		{argv: "git -c gpg.program=x commit", sub: "commit", keys: []string{"gpg.program"}, runs: true},
		{argv: "git -c gpg.ssh.program=x commit", sub: "commit", keys: []string{"gpg.ssh.program"}, runs: true},
		{argv: "git -c credential.helper=x fetch", sub: "fetch", keys: []string{"credential.helper"}, runs: true},
		{argv: "git -c credential.https://h.helper=x fetch", sub: "fetch", keys: []string{"credential.https://h.helper"}, runs: true},
		{argv: "git -c core.fsmonitor=x status", sub: "status", keys: []string{"core.fsmonitor"}, runs: true},
		{argv: "git -c core.hooksPath=/tmp commit", sub: "commit", keys: []string{"core.hooksPath"}, runs: true},
		{argv: "git -c core.gitProxy=x fetch", sub: "fetch", keys: []string{"core.gitProxy"}, runs: true},
		{argv: "git -c core.askPass=x fetch", sub: "fetch", keys: []string{"core.askPass"}, runs: true},
		{argv: "git -c diff.external=x diff", sub: "diff", keys: []string{"diff.external"}, runs: true},
		{argv: "git -c sequence.editor=x rebase", sub: "rebase", keys: []string{"sequence.editor"}, runs: true},
		{argv: "git -c uploadpack.packObjectsHook=x fetch", sub: "fetch", keys: []string{"uploadpack.packObjectsHook"}, runs: true},
		{argv: "git -c protocol.ext.allow=always fetch", sub: "fetch", keys: []string{"protocol.ext.allow"}, runs: true},
		{argv: "git -c remote.origin.uploadpack=x fetch", sub: "fetch", keys: []string{"remote.origin.uploadpack"}, runs: true},
		{argv: "git -c remote.origin.receivepack=x push", sub: "push", keys: []string{"remote.origin.receivepack"}, runs: true},
		{argv: "git -c url.ext::sh.insteadOf=https://x fetch", sub: "fetch", keys: []string{"url.ext::sh.insteadOf"}, runs: true},
		{argv: "git -c include.path=/tmp/c status", sub: "status", keys: []string{"include.path"}, runs: true},
		{argv: "git -c color.ui=never log", sub: "log", keys: []string{"color.ui"}},
		{argv: "git --config-env=core.editor=ED commit", sub: "commit", keys: []string{"core.editor"}, runs: true},
		{argv: "git --config-env core.pager=P log", sub: "log", keys: []string{"core.pager"}, runs: true},
		{argv: "git --git-dir=.git --work-tree=. push", sub: "push"},
		{argv: "git --git-dir .git --work-tree . --namespace n push", sub: "push"},
		{argv: "git -p --no-pager -P --paginate log", sub: "log", runs: true}, // -p/--paginate run the configured pager
		{argv: "git --no-pager -P log", sub: "log"},
		{argv: "git --bare --literal-pathspecs --no-replace-objects --no-optional-locks --glob-pathspecs --icase-pathspecs status", sub: "status"},
		{argv: "git --super-prefix=x/ status", sub: "status"},
		{argv: "git --exec-path=/tmp/evil status", sub: "status", runs: true},
		{argv: "git --exec-path", sub: "--exec-path"},
		{argv: "git --list-cmds=main", sub: "--list-cmds=main"},
		{argv: "git --version", sub: "version"},
		{argv: "git --help push", sub: "help", args: []string{"push"}},
		{argv: "git -h", sub: "help"},
		{argv: "git push origin +main", sub: "push", args: []string{"origin", "+main"}},
		{argv: "git", sub: ""},
		{argv: "/usr/lib/git-core/git-push origin", sub: "push", args: []string{"origin"}},
		{argv: "git -C", errMatch: "needs a value"},
		{argv: "git -c", errMatch: "needs a value"},
		{argv: "git --frobnicate push", sub: "push", errMatch: "unknown git global option"},
		{argv: "git --config-env=novalue log", sub: "log", errMatch: "name=envvar"},
	}
	for _, tt := range tests {
		g, err := ParseGit(strings.Fields(tt.argv))
		if tt.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errMatch) {
				t.Errorf("ParseGit(%q) err = %v, want %q", tt.argv, err, tt.errMatch)
			}
		} else if err != nil {
			t.Errorf("ParseGit(%q): %v", tt.argv, err)
		}
		if tt.errMatch != "" && tt.sub == "" {
			continue
		}
		if g.Sub != tt.sub || (len(g.Args)+len(tt.args) > 0 && !reflect.DeepEqual(g.Args, tt.args)) ||
			(len(g.ConfigKeys)+len(tt.keys) > 0 && !reflect.DeepEqual(g.ConfigKeys, tt.keys)) ||
			(len(g.RunsPrograms) > 0) != tt.runs ||
			(len(g.Dirs)+len(tt.dirs) > 0 && !reflect.DeepEqual(g.Dirs, tt.dirs)) {
			t.Errorf("ParseGit(%q) = sub %q args %q keys %q runs %q dirs %q; want sub %q args %q keys %q runs %v dirs %q",
				tt.argv, g.Sub, g.Args, g.ConfigKeys, g.RunsPrograms, g.Dirs, tt.sub, tt.args, tt.keys, tt.runs, tt.dirs)
		}
	}
	if _, err := ParseGit([]string{"ls"}); !errors.Is(err, ErrNotGit) {
		t.Errorf("ParseGit(ls) err = %v, want ErrNotGit", err)
	}
	if _, err := ParseGit(nil); !errors.Is(err, ErrNotGit) {
		t.Errorf("ParseGit(nil) err = %v, want ErrNotGit", err)
	}
}

func TestGitItems(t *testing.T) {
	tests := []struct {
		argv, cwd string
		want      []string
	}{
		{"git -C target diff", "", []string{"tool:git:diff"}},
		{"/usr/bin/git -C x push", "", []string{"tool:git:push"}},
		{"git -c core.pager=x log", "", []string{"tool:git:log [ask]"}},
		{"git st", "", []string{"tool:git:st"}},
		{"git --help push", "", []string{"tool:git:help push"}},
		{"git --version", "", []string{"tool:git:version"}},
		{"git --exec-path", "", []string{"tool:git:--exec-path"}},
		{"/usr/lib/git-core/git-push origin main", "", []string{"tool:git:push origin main"}},
		{"git-receive-pack /srv/repo.git", "", []string{"tool:git:receive-pack /srv/repo.git"}},
		{"git push -f", "", []string{"tool:git:push -f"}},
		{"git push --force-with-lease=main:abc origin", "", []string{"tool:git:push --force-with-lease=main:abc origin"}},
		{"git push origin :main", "", []string{"tool:git:push origin :main"}},
		{"git push --mirror", "", []string{"tool:git:push --mirror"}},
		{"git push --delete origin x", "", []string{"tool:git:push --delete origin x"}},
		{"git push --receive-pack=evil", "", []string{"tool:git:push --receive-pack=evil [ask]"}},
		{"git fetch --upload-pack=evil", "", []string{"tool:git:fetch --upload-pack=evil [ask]"}},
		{"git clone -u evil url", "", []string{"tool:git:clone -u evil url [ask]"}},
		{"git clone --config core.fsmonitor=x url", "", []string{"tool:git:clone --config core.fsmonitor=x url [ask]"}},
		{"git clone --template=/tmp/t url", "", []string{"tool:git:clone --template=/tmp/t url [ask]"}},
		{"git grep -Ovim foo", "", []string{"tool:git:grep -Ovim foo [ask]"}},
		{"git config core.hooksPath /tmp", "", []string{"tool:git:config core.hooksPath /tmp [ask]"}},
		{"git config --global alias.x !rm", "", []string{"tool:git:config --global alias.x '!rm' [ask]"}},
		{"git config set core.pager less", "", []string{"tool:git:config set core.pager less [ask]"}},
		{"git config --add filter.x.clean evil", "", []string{"tool:git:config --add filter.x.clean evil [ask]"}},
		{"git config --file .git/config credential.helper x", "", []string{"tool:git:config --file .git/config credential.helper x [ask]", "tool:create_file:.git/config"}},
		{"git config --get core.pager", "", []string{"tool:git:config --get core.pager"}},
		{"git config core.pager", "", []string{"tool:git:config core.pager"}},
		{"git config --unset core.pager", "", []string{"tool:git:config --unset core.pager"}},
		{"git config user.name me", "", []string{"tool:git:config user.name me"}},
		{"git config --edit", "", []string{"tool:git:config --edit [ask]"}},
		{"git config --rename-section a alias", "", []string{"tool:git:config --rename-section a alias [ask]"}},
		{"git -C sub rm -r a b", "/w", []string{"tool:git:rm -r a b", "tool:delete:/w/sub/a", "tool:delete:/w/sub/b"}},
		{"git rm --cached a", "", []string{"tool:git:rm --cached a"}},
		{"git clean -fdx", "/w", []string{"tool:git:clean -fdx", "tool:delete:/w"}},
		{"git clean -fd -e keep src", "", []string{"tool:git:clean -fd -e keep src", "tool:delete:src"}},
		{"git clean -n", "", []string{"tool:git:clean -n"}},
		{"git diff --output=/tmp/x", "", []string{"tool:git:diff --output=/tmp/x", "tool:create_file:/tmp/x"}},
		{"git log --output out.txt", "", []string{"tool:git:log --output out.txt", "tool:create_file:out.txt"}},
		{"git format-patch -o out HEAD~1", "", []string{"tool:git:format-patch -o out HEAD~1", "tool:create_file:out"}},
		{"git archive -o a.tar HEAD", "", []string{"tool:git:archive -o a.tar HEAD", "tool:create_file:a.tar"}},
		{"git bundle create b.bundle HEAD", "", []string{"tool:git:bundle create b.bundle HEAD", "tool:create_file:b.bundle"}},
		{"git|submodule|foreach|git push", "", []string{"tool:git:submodule foreach 'git push'", "tool:git:push"}},
		{"git|rebase|-x|make test|main", "", []string{"tool:git:rebase -x 'make test' main", "tool:exec:make test"}},
		{"git bisect run make test", "", []string{"tool:git:bisect run make test", "tool:exec:make test"}},
		{"git|filter-branch|--tree-filter|rm -rf x|HEAD", "", []string{"tool:git:filter-branch --tree-filter 'rm -rf x' HEAD", "tool:exec:rm -rf x", "tool:delete:x"}},
		{"git|difftool|-x|sh -c id", "", []string{"tool:git:difftool -x 'sh -c id' [ask]", "tool:exec:sh -c id (w)", "tool:exec:id"}},
	}
	for _, tt := range tests {
		checkArgv(t, tt.argv, tt.cwd, tt.want)
	}
}

func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", "a b", "it's", "$HOME", "a\nb", "\x01\x7f", "~x", "x~", "{}", "héllo", "\xff"} {
		q := Quote(s)
		items, err := ParseShell("echo " + q)
		if err != nil {
			t.Errorf("Quote(%q) = %q does not parse: %v", s, q, err)
			continue
		}
		if len(items) != 1 || len(items[0].Argv) != 2 || items[0].Argv[1] != s {
			t.Errorf("Quote(%q) = %q reads back as %q", s, q, summary(items))
		}
	}
}
