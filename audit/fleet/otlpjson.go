package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The OTLP/JSON shape of an ExportLogsServiceRequest, as an OpenTelemetry
// Collector's file exporter writes one per line: only the parts that
// carry a record's host, log path and body (the log line).
type otlpRequest struct {
	ResourceLogs []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeLogs []struct {
			LogRecords []struct {
				Body       otlpValue `json:"body"`
				Attributes []otlpKV  `json:"attributes"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
}

type otlpKV struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string `json:"stringValue"`
}

func attr(kvs []otlpKV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key && kv.Value.StringValue != nil {
			return *kv.Value.StringValue
		}
	}
	return ""
}

// Resource attributes audit/export sets (kept equal to its ResHost and
// ResLog; this package does not import the exporter and its SDK).
const (
	resHost = "host.name"
	resLog  = "agentbox.log.path"
)

// ReadOTLPJSON reads the OTLP/JSON logs requests in r (a collector file
// exporter's output: one request object per line) and passes each
// agentbox record to fn as a Line: its host and log from the resource,
// its body (the audit log line) as the bytes. name (the file) and the
// request's number name where a line came from. Records without a string
// body, or whose resource names no host, are an error naming the request:
// a stream that cannot be attributed cannot be verified.
func ReadOTLPJSON(r io.Reader, name string, fn func(Line)) error {
	dec := json.NewDecoder(r)
	for n := 1; ; n++ {
		var req otlpRequest
		err := dec.Decode(&req)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: request %d: not OTLP/JSON logs: %w", name, n, err)
		}
		for _, rl := range req.ResourceLogs {
			host, log := attr(rl.Resource.Attributes, resHost), attr(rl.Resource.Attributes, resLog)
			if host == "" {
				return fmt.Errorf("%s: request %d: a resource without %s: its records cannot be given to a host", name, n, resHost)
			}
			for _, sl := range rl.ScopeLogs {
				for i, lr := range sl.LogRecords {
					if lr.Body.StringValue == nil {
						return fmt.Errorf("%s: request %d: record %d of host %s has no string body (not an agentbox audit record)", name, n, i+1, host)
					}
					fn(Line{Host: host, Log: log, Bytes: []byte(*lr.Body.StringValue), Where: fmt.Sprintf("%s: request %d record %d", name, n, i+1)})
				}
			}
		}
	}
}
