package helper

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// This file is a small classic-BPF assembler, just enough to build a
// seccomp filter: loads from struct seccomp_data, ALU AND, conditional
// jumps to named labels, and returns. Labels let the filter be written as
// readable blocks; Assemble resolves them into the 8-bit jt/jf offsets the
// kernel wants and refuses any program it cannot encode (never silently
// truncating an offset).

// BPF opcodes used by the assembler (linux/filter.h, linux/bpf_common.h).
const (
	bpfLD  = 0x00
	bpfALU = 0x04
	bpfJMP = 0x05
	bpfRET = 0x06

	bpfW   = 0x00
	bpfABS = 0x20

	bpfAND = 0x50

	bpfJA   = 0x00
	bpfJEQ  = 0x10
	bpfJGT  = 0x20
	bpfJGE  = 0x30
	bpfJSET = 0x40

	bpfK = 0x00

	// bpfMaxInsns is BPF_MAXINSNS: the kernel refuses longer programs.
	bpfMaxInsns = 4096
	// bpfMaxCondJump is the largest jt/jf offset a conditional jump can encode.
	bpfMaxCondJump = 255
)

// errJumpTooFar is returned (wrapped) by Assemble when a conditional jump
// would need an offset that does not fit in 8 bits.
var errJumpTooFar = errors.New("bpf: conditional jump offset exceeds 255")

// bpfInsn is one instruction before label resolution. For conditional jumps
// jt/jf name labels ("" means fall through to the next instruction); for
// BPF_JA, jt names the target.
type bpfInsn struct {
	code   uint16
	k      uint32
	jt, jf string
	label  string // set on pseudo-instructions that only define a label
}

// bpfProgram collects instructions and labels; Assemble turns it into the
// kernel's representation. The zero value is an empty program.
type bpfProgram struct {
	insns []bpfInsn
}

// Label defines name at the current position; the next real instruction
// emitted is its target.
func (p *bpfProgram) Label(name string) {
	p.insns = append(p.insns, bpfInsn{label: name})
}

// LoadAbs loads the 32-bit word at offset off of struct seccomp_data into A.
func (p *bpfProgram) LoadAbs(off uint32) {
	p.insns = append(p.insns, bpfInsn{code: bpfLD | bpfW | bpfABS, k: off})
}

// And computes A &= k.
func (p *bpfProgram) And(k uint32) {
	p.insns = append(p.insns, bpfInsn{code: bpfALU | bpfAND | bpfK, k: k})
}

// JumpEq jumps to jt when A == k, else to jf ("" = next instruction).
func (p *bpfProgram) JumpEq(k uint32, jt, jf string) { p.jump(bpfJEQ, k, jt, jf) }

// JumpGE jumps to jt when A >= k, else to jf.
func (p *bpfProgram) JumpGE(k uint32, jt, jf string) { p.jump(bpfJGE, k, jt, jf) }

// JumpSet jumps to jt when A & k != 0, else to jf.
func (p *bpfProgram) JumpSet(k uint32, jt, jf string) { p.jump(bpfJSET, k, jt, jf) }

func (p *bpfProgram) jump(op uint16, k uint32, jt, jf string) {
	p.insns = append(p.insns, bpfInsn{code: bpfJMP | op | bpfK, k: k, jt: jt, jf: jf})
}

// Goto jumps unconditionally to label (32-bit offset, never too far).
func (p *bpfProgram) Goto(label string) {
	p.insns = append(p.insns, bpfInsn{code: bpfJMP | bpfJA, jt: label})
}

// Ret returns the seccomp action k.
func (p *bpfProgram) Ret(k uint32) {
	p.insns = append(p.insns, bpfInsn{code: bpfRET | bpfK, k: k})
}

// Assemble resolves labels and returns the program. It fails when a label is
// undefined or defined twice, when a jump goes backwards or past the end
// (classic BPF only jumps forward), when a conditional offset exceeds 255,
// when the program is empty or longer than BPF_MAXINSNS, or when the last
// instruction is not a return (the kernel would reject it).
func (p *bpfProgram) Assemble() ([]unix.SockFilter, error) {
	pos := make(map[string]int)
	n := 0
	for _, in := range p.insns {
		if in.label != "" {
			if _, dup := pos[in.label]; dup {
				return nil, fmt.Errorf("bpf: label %q defined twice", in.label)
			}
			pos[in.label] = n
			continue
		}
		n++
	}
	if n == 0 {
		return nil, errors.New("bpf: empty program")
	}
	if n > bpfMaxInsns {
		return nil, fmt.Errorf("bpf: program has %d instructions, kernel limit is %d", n, bpfMaxInsns)
	}
	for name, at := range pos {
		if at >= n {
			return nil, fmt.Errorf("bpf: label %q is at the end of the program, after the last instruction", name)
		}
	}
	out := make([]unix.SockFilter, 0, n)
	for _, in := range p.insns {
		if in.label != "" {
			continue
		}
		i := len(out)
		f := unix.SockFilter{Code: in.code, K: in.k}
		if in.code&0x07 == bpfJMP {
			off := func(label string) (int, error) {
				if label == "" {
					return 0, nil
				}
				at, ok := pos[label]
				if !ok {
					return 0, fmt.Errorf("bpf: instruction %d jumps to undefined label %q", i, label)
				}
				d := at - i - 1
				if d < 0 {
					return 0, fmt.Errorf("bpf: instruction %d jumps backwards to label %q", i, label)
				}
				return d, nil
			}
			if in.code == bpfJMP|bpfJA {
				d, err := off(in.jt)
				if err != nil {
					return nil, err
				}
				f.K = uint32(d)
			} else {
				dt, err := off(in.jt)
				if err != nil {
					return nil, err
				}
				df, err := off(in.jf)
				if err != nil {
					return nil, err
				}
				if dt > bpfMaxCondJump || df > bpfMaxCondJump {
					return nil, fmt.Errorf("instruction %d (to %q/%q, offsets %d/%d): %w", i, in.jt, in.jf, dt, df, errJumpTooFar)
				}
				f.Jt, f.Jf = uint8(dt), uint8(df)
			}
		}
		out = append(out, f)
	}
	if out[n-1].Code&0x07 != bpfRET {
		return nil, errors.New("bpf: program does not end with a return instruction")
	}
	return out, nil
}

// bpfRun interprets an assembled program against a seccomp_data image. It
// exists so tests can check the filter's decisions for inputs the kernel
// cannot be asked about safely (wrong architecture, x32, odd argument high
// bits). It implements exactly the opcodes the assembler emits.
func bpfRun(prog []unix.SockFilter, data []byte) (uint32, error) {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLD | bpfW | bpfABS:
			if int(in.K)+4 > len(data) {
				return 0, fmt.Errorf("bpf: load at offset %d outside %d-byte data", in.K, len(data))
			}
			a = binary.NativeEndian.Uint32(data[in.K:])
		case bpfALU | bpfAND | bpfK:
			a &= in.K
		case bpfJMP | bpfJA:
			pc += int(in.K)
		case bpfJMP | bpfJEQ | bpfK, bpfJMP | bpfJGT | bpfK, bpfJMP | bpfJGE | bpfK, bpfJMP | bpfJSET | bpfK:
			var c bool
			switch in.Code &^ (bpfJMP | bpfK) {
			case bpfJEQ:
				c = a == in.K
			case bpfJGT:
				c = a > in.K
			case bpfJGE:
				c = a >= in.K
			case bpfJSET:
				c = a&in.K != 0
			}
			if c {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfRET | bpfK:
			return in.K, nil
		default:
			return 0, fmt.Errorf("bpf: unsupported opcode %#x at %d", in.Code, pc)
		}
	}
	return 0, errors.New("bpf: fell off the end of the program")
}
