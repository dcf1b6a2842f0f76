package helper

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestBPFAssemble(t *testing.T) {
	tests := []struct {
		name    string
		build   func(p *bpfProgram)
		want    []unix.SockFilter
		wantErr string
	}{
		{
			name: "labels resolve to forward offsets",
			build: func(p *bpfProgram) {
				p.LoadAbs(0)
				p.JumpEq(7, "yes", "")
				p.JumpSet(1, "", "no")
				p.Ret(1)
				p.Label("yes")
				p.Ret(2)
				p.Label("no")
				p.Ret(3)
			},
			want: []unix.SockFilter{
				{Code: bpfLD | bpfW | bpfABS, K: 0},
				{Code: bpfJMP | bpfJEQ | bpfK, Jt: 2, Jf: 0, K: 7},
				{Code: bpfJMP | bpfJSET | bpfK, Jt: 0, Jf: 2, K: 1},
				{Code: bpfRET | bpfK, K: 1},
				{Code: bpfRET | bpfK, K: 2},
				{Code: bpfRET | bpfK, K: 3},
			},
		},
		{
			name: "two labels on one instruction and goto",
			build: func(p *bpfProgram) {
				p.Goto("b")
				p.Ret(9)
				p.Label("a")
				p.Label("b")
				p.Ret(1)
			},
			want: []unix.SockFilter{
				{Code: bpfJMP | bpfJA, K: 1},
				{Code: bpfRET | bpfK, K: 9},
				{Code: bpfRET | bpfK, K: 1},
			},
		},
		{name: "empty", build: func(p *bpfProgram) {}, wantErr: "empty program"},
		{name: "undefined label", build: func(p *bpfProgram) { p.JumpEq(1, "nowhere", ""); p.Ret(0) }, wantErr: "undefined label"},
		{name: "duplicate label", build: func(p *bpfProgram) { p.Label("x"); p.Label("x"); p.Ret(0) }, wantErr: "defined twice"},
		{name: "backward jump", build: func(p *bpfProgram) { p.Label("top"); p.LoadAbs(0); p.JumpEq(1, "top", ""); p.Ret(0) }, wantErr: "backwards"},
		{name: "label after end", build: func(p *bpfProgram) { p.JumpEq(1, "end", ""); p.Ret(0); p.Label("end") }, wantErr: "at the end"},
		{name: "no final return", build: func(p *bpfProgram) { p.LoadAbs(0) }, wantErr: "does not end with a return"},
		{
			name: "jump of exactly 255 is encoded",
			build: func(p *bpfProgram) {
				p.JumpEq(1, "far", "")
				for i := 0; i < 255; i++ {
					p.Ret(0)
				}
				p.Label("far")
				p.Ret(1)
			},
		},
		{
			name: "jump of 256 is refused",
			build: func(p *bpfProgram) {
				p.JumpEq(1, "", "far")
				for i := 0; i < 256; i++ {
					p.Ret(0)
				}
				p.Label("far")
				p.Ret(1)
			},
			wantErr: "exceeds 255",
		},
		{
			name: "too many instructions",
			build: func(p *bpfProgram) {
				for i := 0; i <= bpfMaxInsns; i++ {
					p.Ret(0)
				}
			},
			wantErr: "kernel limit",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p bpfProgram
			tc.build(&p)
			got, err := p.Assemble()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Assemble() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if len(got) != len(tc.want) {
					t.Fatalf("got %d instructions, want %d: %+v", len(got), len(tc.want), got)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("insn %d = %+v, want %+v", i, got[i], tc.want[i])
					}
				}
			}
		})
	}
}

func TestBPFJumpTooFarIsTyped(t *testing.T) {
	var p bpfProgram
	p.JumpEq(1, "far", "")
	for i := 0; i < 300; i++ {
		p.Ret(0)
	}
	p.Label("far")
	p.Ret(1)
	if _, err := p.Assemble(); !errors.Is(err, errJumpTooFar) {
		t.Fatalf("err = %v, want errJumpTooFar", err)
	}
}

// FuzzBPFAssemble builds random programs from a byte string and checks
// that Assemble either refuses them or produces a program whose every jump
// lands inside the program, which the interpreter can run to a return.
func FuzzBPFAssemble(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{2, 200, 2, 10, 5, 5, 5, 1, 0})
	f.Add(make([]byte, 600))
	f.Fuzz(func(t *testing.T, ops []byte) {
		var p bpfProgram
		labels := []string{"a", "b", "c", "d"}
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%7, ops[i+1]
			lbl := labels[int(arg)%len(labels)]
			switch op {
			case 0:
				p.LoadAbs(uint32(arg%16) * 4)
			case 1:
				p.JumpEq(uint32(arg), lbl, "")
			case 2:
				p.JumpSet(uint32(arg), "", lbl)
			case 3:
				p.Label(lbl)
			case 4:
				p.Goto(lbl)
			case 5:
				p.Ret(uint32(arg))
			case 6:
				p.JumpGE(uint32(arg), lbl, lbl)
			}
		}
		prog, err := p.Assemble()
		if err != nil {
			return
		}
		for i, in := range prog {
			if in.Code&0x07 != bpfJMP {
				continue
			}
			targets := []int{i + 1 + int(in.Jt), i + 1 + int(in.Jf)}
			if in.Code == bpfJMP|bpfJA {
				targets = []int{i + 1 + int(in.K)}
			}
			for _, to := range targets {
				if to >= len(prog) {
					t.Fatalf("insn %d jumps to %d, past the %d-insn program", i, to, len(prog))
				}
			}
		}
		if _, err := bpfRun(prog, make([]byte, 64)); err != nil {
			t.Fatalf("assembled program does not run: %v", err)
		}
	})
}
