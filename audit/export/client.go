package export

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"google.golang.org/grpc/credentials"
)

// Endpoint says where and how to send: an OTLP logs endpoint URL and
// what the connection needs.
//
//	http://HOST:4318[/v1/logs]   OTLP/HTTP (protobuf), plain
//	https://HOST:4318[/PATH]     OTLP/HTTP over TLS
//	grpc://HOST:4317             OTLP/gRPC, plain
//	grpcs://HOST:4317            OTLP/gRPC over TLS
type Endpoint struct {
	URL     string
	Headers map[string]string // sent with every request (authorization, tenant)
	CAFile  string            // PEM roots for TLS (default: the system's)
	Timeout time.Duration     // per request (default 10s)
}

// NewExporter makes the OpenTelemetry SDK's OTLP log exporter for ep. The
// SDK's own retries are off: the Follower retries a batch itself, from
// the local log, and moves its cursor only when a batch is acknowledged.
func NewExporter(ctx context.Context, ep Endpoint) (sdklog.Exporter, error) {
	u, err := url.Parse(ep.URL)
	if err != nil {
		return nil, fmt.Errorf("export endpoint %q: %w", ep.URL, err)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("export endpoint %q: want SCHEME://HOST:PORT[/PATH] (no user, query or fragment)", ep.URL)
	}
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var tlsCfg *tls.Config
	if u.Scheme == "https" || u.Scheme == "grpcs" {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if ep.CAFile != "" {
			pem, err := os.ReadFile(ep.CAFile)
			if err != nil {
				return nil, fmt.Errorf("export CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("export CA file %s: no PEM certificate in it", ep.CAFile)
			}
			tlsCfg.RootCAs = pool
		}
	}
	switch u.Scheme {
	case "http", "https":
		path := u.Path
		if path == "" || path == "/" {
			path = "/v1/logs"
		}
		opts := []otlploghttp.Option{
			otlploghttp.WithEndpoint(u.Host),
			otlploghttp.WithURLPath(path),
			otlploghttp.WithTimeout(timeout),
			otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}),
			otlploghttp.WithHeaders(ep.Headers),
		}
		if tlsCfg == nil {
			opts = append(opts, otlploghttp.WithInsecure())
		} else {
			opts = append(opts, otlploghttp.WithTLSClientConfig(tlsCfg))
		}
		return otlploghttp.New(ctx, opts...)
	case "grpc", "grpcs":
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("export endpoint %q: an OTLP/gRPC endpoint has no path", ep.URL)
		}
		opts := []otlploggrpc.Option{
			otlploggrpc.WithEndpoint(u.Host),
			otlploggrpc.WithTimeout(timeout),
			otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false}),
			otlploggrpc.WithHeaders(ep.Headers),
			otlploggrpc.WithReconnectionPeriod(200 * time.Millisecond),
		}
		if tlsCfg == nil {
			opts = append(opts, otlploggrpc.WithInsecure())
		} else {
			opts = append(opts, otlploggrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		}
		return otlploggrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("export endpoint %q: scheme %q: want http, https, grpc or grpcs", ep.URL, u.Scheme)
}
