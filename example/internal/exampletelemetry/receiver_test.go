package exampletelemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP receiver on 127.0.0.1 speaking gRPC and HTTP/protobuf,
// counting the spans and metrics it is sent, per protocol.
type receiver struct {
	GRPC, HTTP string // host:port

	// holdFirstMetrics makes the first gRPC metrics export wait until the
	// exporter gives up on it; held is closed when it starts waiting.
	holdFirstMetrics bool
	held             chan struct{}
	holdOnce         sync.Once

	mu      sync.Mutex
	spans   map[string]int // by protocol: "grpc", "http"
	metrics map[string]int
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	return startReceiverWith(t, false)
}

func startReceiverWith(t *testing.T, holdFirstMetrics bool) *receiver {
	t.Helper()
	r := &receiver{spans: map[string]int{}, metrics: map[string]int{}, holdFirstMetrics: holdFirstMetrics, held: make(chan struct{})}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.GRPC, r.HTTP = gl.Addr().String(), hl.Addr().String()

	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, traceServer{r: r})
	colmetricpb.RegisterMetricsServiceServer(gs, metricsServer{r: r})
	mux := http.NewServeMux()
	mux.Handle("POST /v1/traces", otlpHandler(func(m *coltracepb.ExportTraceServiceRequest) { r.addSpans("http", m) }, &coltracepb.ExportTraceServiceResponse{}))
	mux.Handle("POST /v1/metrics", otlpHandler(func(m *colmetricpb.ExportMetricsServiceRequest) { r.addMetrics("http", m) }, &colmetricpb.ExportMetricsServiceResponse{}))
	hs := &http.Server{Handler: mux}
	go func() { _ = gs.Serve(gl) }()
	go func() { _ = hs.Serve(hl) }()
	t.Cleanup(func() {
		gs.Stop()
		hs.Close()
	})
	return r
}

// otlpHandler serves one OTLP/HTTP (protobuf) export path: it decodes the
// request, hands it to add and answers resp.
func otlpHandler[Req any, PReq interface {
	*Req
	proto.Message
}](add func(PReq), resp proto.Message) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		m := PReq(new(Req))
		b, err := io.ReadAll(req.Body)
		if err == nil {
			err = proto.Unmarshal(b, m)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		add(m)
		b, _ = proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})
}

// traceServer and metricsServer are the receiver's gRPC services.
type traceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	r *receiver
}

func (s traceServer) Export(_ context.Context, m *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.addSpans("grpc", m)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricsServer struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (s metricsServer) Export(ctx context.Context, m *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	if s.r.holdFirstMetrics {
		first := false
		s.r.holdOnce.Do(func() { first = true })
		if first {
			close(s.r.held)
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	s.r.addMetrics("grpc", m)
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// counts returns the spans and metrics received over proto ("grpc" or "http").
func (r *receiver) counts(proto string) (spans, metrics int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans[proto], r.metrics[proto]
}

func (r *receiver) addSpans(proto string, m *coltracepb.ExportTraceServiceRequest) {
	n := 0
	for _, rs := range m.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	r.add(proto, n, 0)
}

func (r *receiver) addMetrics(proto string, m *colmetricpb.ExportMetricsServiceRequest) {
	n := 0
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			n += len(sm.Metrics)
		}
	}
	r.add(proto, 0, n)
}

func (r *receiver) add(proto string, spans, metrics int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans[proto] += spans
	r.metrics[proto] += metrics
}

// startHangingCollector returns the address of a TCP server on 127.0.0.1
// that accepts connections and never answers, as a hung collector.
func startHangingCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
