package audit

// Sink receives a run's audit events: the one interface the judge, the
// egress proxy and the launcher write through. An error means the event
// could not be recorded (the caller fails closed unless told otherwise).
type Sink interface {
	Emit(Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event) error

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) error { return f(e) }

// Emit writes e: a Writer is a Sink.
func (w *Writer) Emit(e Event) error { return w.Write(e) }

// SeqSink is a Sink that says which seq an event was written with.
type SeqSink interface {
	Sink
	EmitSeq(Event) (uint64, error)
}

// EmitSeq writes e and returns its seq: a Writer is a SeqSink.
func (w *Writer) EmitSeq(e Event) (uint64, error) { return w.WriteSeq(e) }
