package exampletelemetry

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporters are chosen as the OpenTelemetry specification's
// "Exporter selection" and OTLP exporter sections define it
// (OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_*), with
// two deviations that keep the examples' contract, both in docs/environment.md:
// with OTEL_*_EXPORTER unset, a signal goes over OTLP only when an OTLP
// endpoint is set, and the OTLP protocol defaults to grpc. Each SDK exporter
// then reads the rest of its configuration (endpoint, headers, TLS, timeout,
// compression) from the same variables itself.
//
// go.opentelemetry.io/contrib/exporters/autoexport does the selection too,
// but its v0.72.0 (the one built for otel v1.47.0) raises the minimum
// versions every user of this module builds with (go-openapi/swag and its
// submodules v0.28.0 to v0.29.2, which client-go compiles in; grpc v1.83.2
// to v1.84.0) and adds 15 modules to the graph where the four exporters used
// here add 3 (docs/environment.md has the measurement); it
// also defaults to http/protobuf and to exporting when no endpoint is set,
// and its "prometheus" exporter opens a server of its own on the port of
// -metrics-addr. The selection left to write is the switch below.

// Signal names as the variables spell them.
const (
	signalTraces  = "TRACES"
	signalMetrics = "METRICS"
)

// Supported values of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	protoGRPC         = "grpc"
	protoHTTPProtobuf = "http/protobuf"
	protoHTTPJSON     = "http/json"
)

// exporterNames returns the exporters OTEL_<signal>_EXPORTER names (a
// comma-separated list), or, when it is unset, "otlp" if an OTLP endpoint is
// set for the signal and "none" otherwise.
func exporterNames(signal string, supported ...string) ([]string, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	v := getenv(name)
	if v == "" {
		if _, _, ok := endpointVar(signal); ok {
			return []string{"otlp"}, nil
		}
		return []string{"none"}, nil
	}
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(supported, n) {
			return nil, fmt.Errorf("%s=%q: %q is not supported here; use one of %s, or a comma-separated list of them",
				name, v, n, strings.Join(supported, ", "))
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) > 1 && slices.Contains(names, "none") {
		return nil, fmt.Errorf("%s=%q: none cannot be combined with other exporters", name, v)
	}
	return names, nil
}

// otlpTarget is where the SDK's OTLP exporter of a signal sends.
type otlpTarget struct {
	protocol string // grpc, http/protobuf or http/json
	// endpoint is what is dialled: host:port for gRPC, the full URL for HTTP.
	endpoint string
	tls      bool
}

func (t otlpTarget) String() string {
	if t.protocol == protoGRPC {
		security := "plaintext"
		if t.tls {
			security = "TLS"
		}
		return fmt.Sprintf("OTLP gRPC to %s (%s)", t.endpoint, security)
	}
	return fmt.Sprintf("OTLP %s to %s", t.protocol, t.endpoint)
}

// resolveOTLP validates the OTEL_EXPORTER_OTLP_* variables that apply to
// signal and returns what the SDK's exporter will dial, read as the SDK
// reads them (otlpconfig in the exporter modules): the per-signal variable
// first, then the general one, then the default endpoint. The SDK ignores a
// malformed endpoint and silently dials its default instead; here it is an
// error.
func resolveOTLP(signal string) (otlpTarget, error) {
	t := otlpTarget{protocol: protoGRPC}
	protoVar := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	p := getenv(protoVar)
	if p == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = getenv(protoVar)
	}
	switch {
	case p == "" || p == protoGRPC || p == protoHTTPProtobuf:
	case p == protoHTTPJSON && signal == signalTraces:
	default:
		want := "grpc or http/protobuf"
		if signal == signalTraces {
			want = "grpc, http/protobuf or http/json"
		}
		return t, fmt.Errorf("%s=%q: the Go SDK's OTLP %s exporter supports %s", protoVar, p, strings.ToLower(signal), want)
	}
	if p != "" {
		t.protocol = p
	}

	name, raw, ok := endpointVar(signal)
	if !ok {
		// The SDK's defaults: localhost and the protocol's port, with TLS.
		t.tls = true
		if t.protocol == protoGRPC {
			t.endpoint = "localhost:4317"
		} else {
			t.endpoint = "https://localhost:4318/v1/" + strings.ToLower(signal)
		}
		return t.insecureFromEnv(signal), nil
	}
	u, err := parseEndpoint(name, raw)
	if err != nil {
		return t, err
	}
	t.tls = u.Scheme == "https"
	if t.protocol == protoGRPC {
		t.endpoint = u.Host
		if u.Port() == "" {
			t.endpoint = net.JoinHostPort(u.Hostname(), "443") // gRPC's default port
		}
		return t.insecureFromEnv(signal), nil
	}
	// OTLP/HTTP: a per-signal URL is used as is ("/" for no path), the
	// general one is a base to which /v1/<signal> is appended.
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = path.Join(u.Path, "/v1/"+strings.ToLower(signal))
	} else if u.Path == "" {
		u.Path = "/"
	}
	t.endpoint = u.String()
	return t, nil
}

// insecureFromEnv applies OTEL_EXPORTER_OTLP_INSECURE and its per-signal
// variant, which the SDK's exporters read after the endpoint (so they win
// over its scheme).
func (t otlpTarget) insecureFromEnv(signal string) otlpTarget {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_" + signal + "_INSECURE"} {
		if b, err := strconv.ParseBool(getenv(name)); err == nil {
			t.tls = !b
		}
	}
	return t
}

// endpointVar returns the OTLP endpoint variable that applies to signal and
// its value: OTEL_EXPORTER_OTLP_<signal>_ENDPOINT, else
// OTEL_EXPORTER_OTLP_ENDPOINT.
func endpointVar(signal string) (name, value string, ok bool) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := getenv(name); v != "" {
			return name, v, true
		}
	}
	return "", "", false
}

// getenv returns the variable's value as the SDK's exporters read it:
// trimmed, and empty meaning unset.
func getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// parseEndpoint checks that the value of the variable name is what the
// specification asks for: a URL with the scheme http (plaintext) or https
// (TLS), a host and, if any, a port in 1-65535.
func parseEndpoint(name, raw string) (*url.URL, error) {
	const want = "use http://host:port (plaintext) or https://host:port (TLS), e.g. http://127.0.0.1:4317"
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s=%q is not a URL (%v): %s", name, raw, err, want)
	}
	switch {
	case u.Scheme == "http" || u.Scheme == "https":
	case u.Opaque != "" || u.Scheme == "":
		// "localhost:4317" parses as scheme "localhost".
		return nil, fmt.Errorf("%s=%q has no http:// or https:// scheme: %s", name, raw, want)
	default:
		return nil, fmt.Errorf("%s=%q: scheme %q is not supported: %s", name, raw, u.Scheme, want)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%s=%q names no host: %s", name, raw, want)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%s=%q: port %s is out of range 1-65535: %s", name, raw, p, want)
		}
	}
	return u, nil
}

// exporterFactories make a signal's exporters; each reads its own
// configuration from the environment.
type exporterFactories[E any] struct {
	grpc, http, console func(context.Context) (E, error)
}

// newExporters makes the exporters names (otlp, console, none) for signal,
// and returns them with the OTLP targets among them. On error it returns
// those made so far, for the caller to shut down.
func newExporters[E any](ctx context.Context, signal string, names []string, f exporterFactories[E]) ([]E, []otlpTarget, error) {
	var (
		exps    []E
		targets []otlpTarget
	)
	for _, n := range names {
		var (
			e   E
			err error
		)
		switch n {
		case "none":
			continue
		case "console":
			e, err = f.console(ctx)
		case "otlp":
			t, terr := resolveOTLP(signal)
			if terr != nil {
				return exps, nil, terr
			}
			if t.protocol == protoGRPC {
				e, err = f.grpc(ctx)
			} else {
				e, err = f.http(ctx)
			}
			if err != nil {
				err = fmt.Errorf("OTLP %s exporter (%s): %w", strings.ToLower(signal), t, err)
			}
			targets = append(targets, t)
		default:
			err = fmt.Errorf("no %s exporter %q", strings.ToLower(signal), n)
		}
		if err != nil {
			return exps, nil, err
		}
		exps = append(exps, e)
	}
	return exps, targets, nil
}

// consoleNamed reports whether the signal's exporters variable names the
// console exporter (Setup has checked the variable before).
func consoleNamed(signal string) bool {
	names, err := exporterNames(signal, "otlp", "prometheus", "console", "none")
	return err == nil && slices.Contains(names, "console")
}

// spanExporters returns the span exporters OTEL_TRACES_EXPORTER asks for,
// and the OTLP targets among them.
func spanExporters(ctx context.Context) ([]sdktrace.SpanExporter, []otlpTarget, error) {
	names, err := exporterNames(signalTraces, "otlp", "console", "none")
	if err != nil {
		return nil, nil, err
	}
	return newExporters(ctx, signalTraces, names, exporterFactories[sdktrace.SpanExporter]{
		grpc:    func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracegrpc.New(ctx) },
		http:    func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracehttp.New(ctx) },
		console: func(context.Context) (sdktrace.SpanExporter, error) { return stdouttrace.New() },
	})
}

// metricReaders returns periodic readers for the push exporters
// OTEL_METRICS_EXPORTER asks for, the OTLP targets among them, and whether
// it names prometheus (served at -metrics-addr).
func metricReaders(ctx context.Context) (readers []sdkmetric.Reader, targets []otlpTarget, prometheus bool, err error) {
	names, err := exporterNames(signalMetrics, "otlp", "prometheus", "console", "none")
	if err != nil {
		return nil, nil, false, err
	}
	if i := slices.Index(names, "prometheus"); i >= 0 {
		prometheus = true
		names = slices.Delete(names, i, i+1)
	}
	exps, targets, err := newExporters(ctx, signalMetrics, names, exporterFactories[sdkmetric.Exporter]{
		grpc:    func(ctx context.Context) (sdkmetric.Exporter, error) { return otlpmetricgrpc.New(ctx) },
		http:    func(ctx context.Context) (sdkmetric.Exporter, error) { return otlpmetrichttp.New(ctx) },
		console: func(context.Context) (sdkmetric.Exporter, error) { return stdoutmetric.New() },
	})
	for _, e := range exps {
		// The periodic reader honours OTEL_METRIC_EXPORT_INTERVAL and
		// OTEL_METRIC_EXPORT_TIMEOUT.
		readers = append(readers, sdkmetric.NewPeriodicReader(e))
	}
	return readers, targets, prometheus, err
}
