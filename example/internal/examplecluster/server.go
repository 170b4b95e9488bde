package examplecluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// maxBodyBytes bounds a request body, as kube-apiserver does (3 MiB).
const maxBodyBytes = 3 << 20

// retryAfterSeconds is the Retry-After of a request the simulated API
// Priority and Fairness rejects; client-go's rest client sleeps that long
// and retries, up to 10 times.
const retryAfterSeconds = 1

// Server is the embedded cluster: a small Kubernetes API server on
// loopback, over real HTTP, so that client-go's REST client, rate limiter,
// retries and any transport wrapper see the examples' requests as on a
// real cluster. It serves namespaced ConfigMaps, in JSON or in protobuf
// (which client-go's typed clients of built-in types send and ask for when
// rest.Config.ContentType is empty):
//
//	GET    /api/v1/configmaps                               list or watch, all namespaces
//	GET    /api/v1/namespaces/{namespace}/configmaps        list or watch
//	POST   /api/v1/namespaces/{namespace}/configmaps        create
//	GET    /api/v1/namespaces/{namespace}/configmaps/{name} get
//	PUT    /api/v1/namespaces/{namespace}/configmaps/{name} update
//	PATCH  /api/v1/namespaces/{namespace}/configmaps/{name} JSON, merge or strategic merge patch
//	DELETE /api/v1/namespaces/{namespace}/configmaps/{name} delete
//
// Watches stream watch events from a resourceVersion, or with the current
// objects first (the watch-list of client-go's reflector:
// sendInitialEvents=true, ended by a bookmark annotated
// k8s.io/initial-events-end). Errors are metav1.Status bodies with their
// HTTP code, which client-go turns into its apierrors. Namespaces need not
// exist (as with client-go's fake clientset). Server-side apply, dry runs,
// pagination, discovery and every other resource are not served.
//
// With ServerOptions.QPS set, the server also throttles like API Priority
// and Fairness: see ServerOptions.
type Server struct {
	store   *store
	qps     float64
	burst   int
	clock   clock.PassiveClock
	url     string
	http    *http.Server
	served  chan struct{} // closed when Serve returned
	stopped chan struct{} // closed by Close: open watches end

	closeOnce sync.Once
	life      sync.RWMutex // closing, against active.Add
	closing   bool
	active    sync.WaitGroup // requests being served

	requests atomic.Uint64
	mu       sync.Mutex
	exempt   []string                                  // User-Agents not limited
	buckets  map[string]flowcontrol.PassiveRateLimiter // by User-Agent
	rejected map[string]uint64                         // by User-Agent
}

// ServerOptions configure a Server.
type ServerOptions struct {
	// QPS simulates API Priority and Fairness (-server-qps): each client,
	// told apart by its User-Agent header as API Priority and Fairness
	// tells flows apart by user, has a token bucket of QPS requests per
	// second and a burst of max(1, ceil(QPS)); a request that finds no
	// token gets 429 Too Many Requests with Retry-After: 1, which client-go
	// retries. Watches are exempt, as their long-running part is. 0 is no
	// limit.
	QPS float64
	// Exempt are User-Agents the QPS limit does not apply to, as API
	// Priority and Fairness exempts a priority level or gives it a share
	// of its own: the demo's workload stands for the cluster's other
	// clients.
	Exempt []string
	// Clock is the token buckets' clock; nil means the real one.
	Clock clock.PassiveClock

	history int // watch events kept at least; 0 means defaultHistory
}

// ServerStats are a Server's counts since it started.
type ServerStats struct {
	// QPS and Burst are the per-client limit (ServerOptions.QPS), 0 when off.
	QPS   float64
	Burst int
	// Requests is the number of requests received, rejected ones included.
	Requests uint64
	// Rejected is the number of requests rejected with 429, by User-Agent.
	Rejected map[string]uint64
}

// NewServer starts a Server on 127.0.0.1 at a port of the system's choice.
// Close stops it.
func NewServer(opts ServerOptions) (*Server, error) {
	if err := CheckRate("the embedded API server's QPS", opts.QPS, false, MaxKubeQPS, "requests per second"); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.history <= 0 {
		opts.history = defaultHistory
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the embedded API server cannot listen on loopback: %w", err)
	}
	s := &Server{
		store:    newStore(opts.history),
		qps:      opts.QPS,
		exempt:   slices.Clone(opts.Exempt),
		clock:    opts.Clock,
		url:      "http://" + ln.Addr().String(),
		served:   make(chan struct{}),
		stopped:  make(chan struct{}),
		buckets:  map[string]flowcontrol.PassiveRateLimiter{},
		rejected: map[string]uint64{},
	}
	if s.qps > 0 {
		s.burst = max(1, int(math.Ceil(s.qps)))
	}
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(ln) // http.ErrServerClosed once Close is called
	}()
	return s, nil
}

// URL returns the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.url }

// Close stops the server: open watches end, requests in flight get a
// second to finish, and Close returns once every connection is closed and
// every handler has returned. It may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.life.Lock()
		s.closing = true
		s.life.Unlock()
		close(s.stopped)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.http.Shutdown(ctx); err != nil {
			_ = s.http.Close() // cuts what is still running
		}
		cancel()
		<-s.served
		s.active.Wait()
	})
}

// Stats returns the server's counts.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ServerStats{QPS: s.qps, Burst: s.burst, Requests: s.requests.Load(), Rejected: maps.Clone(s.rejected)}
}

// add stores obj as a create would, without a request (Workload.Seed).
func (s *Server) add(obj runtime.Object) error { return s.store.add(obj) }

// enter counts a request in, or returns false once Close has begun.
func (s *Server) enter() bool {
	s.life.RLock()
	defer s.life.RUnlock()
	if s.closing {
		return false
	}
	s.active.Add(1)
	return true
}

// admit takes a token of userAgent's bucket, or counts a rejection.
func (s *Server) admit(userAgent string) bool {
	if s.qps <= 0 || slices.Contains(s.exempt, userAgent) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[userAgent]
	if b == nil {
		b = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(float32(s.qps), s.burst, s.clock)
		s.buckets[userAgent] = b
	}
	if b.TryAccept() {
		return true
	}
	s.rejected[userAgent]++
	return false
}

// ServeHTTP serves one request of the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out := reply{w: w, info: jsonInfo}
	if !s.enter() {
		out.error(apierrors.NewServiceUnavailable("the embedded API server is stopping"))
		return
	}
	defer s.active.Done()
	s.requests.Add(1)

	if r.URL.Path == seedPath {
		s.serveSeed(w, r)
		return
	}
	query := r.URL.Query()
	watching := r.Method == http.MethodGet && isTrue(query.Get("watch"))
	if !watching && !s.admit(r.UserAgent()) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		out.error(apierrors.NewTooManyRequests(fmt.Sprintf(
			"the embedded API server's -server-qps limit (%g requests per second for each client, burst %d) rejected this request of %q",
			s.qps, s.burst, r.UserAgent()), retryAfterSeconds))
		return
	}
	info, ok := negotiate(r.Header.Values("Accept"))
	if !ok {
		out.error(statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, fmt.Sprintf(
			"the embedded API server answers in %s or %s only, which Accept %q does not take", runtime.ContentTypeJSON, runtime.ContentTypeProtobuf, r.Header.Get("Accept"))))
		return
	}
	out.info = info
	ns, name, ok := route(r.URL.Path)
	if !ok {
		out.error(statusError(http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf(
			"the embedded API server serves ConfigMaps only, at /api/v1/namespaces/{namespace}/configmaps[/{name}] and /api/v1/configmaps: nothing at %s", r.URL.Path)))
		return
	}
	switch {
	case name == "" && r.Method == http.MethodGet:
		s.listOrWatch(out, r, ns, query)
	case name == "" && r.Method == http.MethodPost && ns != "":
		s.create(out, r, ns)
	case name != "" && r.Method == http.MethodGet:
		obj, err := s.store.do(k8stesting.NewGetActionWithOptions(configMaps, ns, name, metav1.GetOptions{}))
		out.respond(http.StatusOK, obj, err)
	case name != "" && r.Method == http.MethodPut:
		s.update(out, r, ns, name)
	case name != "" && r.Method == http.MethodPatch:
		s.patch(out, r, ns, name)
	case name != "" && r.Method == http.MethodDelete:
		s.delete(out, r, ns, name)
	default:
		out.error(apierrors.NewMethodNotSupported(configMaps.GroupResource(), r.Method))
	}
}

// route splits a path of the API into its namespace (empty for all) and
// name (empty for the collection), or returns false.
func route(path string) (ns, name string, ok bool) {
	p := strings.Split(strings.Trim(path, "/"), "/")
	if len(p) < 3 || p[0] != "api" || p[1] != "v1" {
		return "", "", false
	}
	switch {
	case len(p) == 3 && p[2] == "configmaps":
		return "", "", true
	case len(p) == 5 && p[2] == "namespaces" && p[3] != "" && p[4] == "configmaps":
		return p[3], "", true
	case len(p) == 6 && p[2] == "namespaces" && p[3] != "" && p[4] == "configmaps" && p[5] != "":
		return p[3], p[5], true
	}
	return "", "", false
}

// listOrWatch serves GET on a collection.
func (s *Server) listOrWatch(out reply, r *http.Request, ns string, query map[string][]string) {
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(query, metav1.SchemeGroupVersion, &opts); err != nil {
		out.error(apierrors.NewBadRequest(err.Error()))
		return
	}
	if errs := validation.ValidateListOptions(&opts, true); len(errs) > 0 {
		out.error(apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs))
		return
	}
	f := filter{labels: opts.LabelSelector, fields: opts.FieldSelector}
	if opts.LabelSelector == nil || opts.LabelSelector.Empty() {
		f.labels = nil
	}
	if opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		f.fields = nil
	} else {
		for _, req := range opts.FieldSelector.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				out.error(apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (the embedded API server selects ConfigMaps by metadata.name and metadata.namespace)", req.Field)))
				return
			}
		}
	}
	if opts.Watch {
		s.watch(out, r, ns, opts, f)
		return
	}
	if opts.Continue != "" {
		out.error(apierrors.NewBadRequest(fmt.Sprintf("continue %q: the embedded API server lists everything at once and never returns a continue token", opts.Continue)))
		return
	}
	l, err := s.store.list(ns)
	if err != nil {
		out.error(err)
		return
	}
	cur, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			out.error(err)
			return
		}
		if rv > cur {
			out.error(tooLarge(rv, cur))
			return
		}
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && rv != cur {
			out.error(apierrors.NewResourceExpired(fmt.Sprintf(
				"the embedded API server keeps only the current state: resourceVersion %d is not the current one (%d)", rv, cur)))
			return
		}
	}
	if f.labels != nil || f.fields != nil {
		items := l.Items[:0]
		for _, cm := range l.Items {
			if f.matches(&cm) {
				items = append(items, cm)
			}
		}
		l.Items = items
	}
	l.TypeMeta = metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"}
	out.object(http.StatusOK, l)
}

// watch streams the events of namespace ns (all with "") as
// metav1.WatchEvents (newline-delimited JSON, or length-prefixed protobuf)
// until the client goes away, the request's timeoutSeconds pass or the
// server stops.
//
// With sendInitialEvents=true (client-go's watch-list), or with no
// resourceVersion (or "0") and no sendInitialEvents (the legacy watch),
// the current objects come first as ADDED events; after those of
// sendInitialEvents=true, a BOOKMARK annotated k8s.io/initial-events-end
// carries their resourceVersion, if allowWatchBookmarks. Otherwise the
// stream starts after the resourceVersion given (the current one if none):
// one older than the store's history gets an ERROR event, 410 Gone, as the
// watch cache of a real API server answers, and the client lists again.
// A watch that asks for bookmarks gets one a minute while it has no event.
func (s *Server) watch(out reply, r *http.Request, ns string, opts metainternalversion.ListOptions, f filter) {
	var from int64
	var initial *corev1.ConfigMapList
	requested := int64(-1)
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			out.error(err)
			return
		}
		requested = rv
	}
	sendInitial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	legacyInitial := opts.SendInitialEvents == nil && requested < 0
	if sendInitial || legacyInitial {
		l, err := s.store.list(ns)
		if err != nil {
			out.error(err)
			return
		}
		initial = l
		from, _ = strconv.ParseInt(l.ResourceVersion, 10, 64)
	} else {
		from = s.store.current()
	}
	if requested > from {
		out.error(tooLarge(requested, from))
		return
	}
	if requested >= 0 && initial == nil {
		from = requested
	}

	var timeout <-chan time.Time
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		t := time.NewTimer(time.Duration(*opts.TimeoutSeconds) * time.Second)
		defer t.Stop()
		timeout = t.C
	}
	mediaType := out.info.MediaType
	if mediaType != runtime.ContentTypeJSON {
		mediaType += ";stream=watch" // as kube-apiserver says it
	}
	out.w.Header().Set("Content-Type", mediaType)
	out.w.Header().Set("Cache-Control", "no-cache, private")
	out.w.WriteHeader(http.StatusOK)
	events := &eventWriter{info: out.info, frames: out.info.StreamSerializer.Framer.NewFrameWriter(out.w), rc: http.NewResponseController(out.w)}
	if initial != nil {
		for i := range initial.Items {
			cm := &initial.Items[i]
			if f.matches(cm) {
				cm.TypeMeta = configMapKind
				events.write(watch.Added, cm)
			}
		}
		if sendInitial && opts.AllowWatchBookmarks {
			events.write(watch.Bookmark, &corev1.ConfigMap{TypeMeta: configMapKind, ObjectMeta: metav1.ObjectMeta{
				ResourceVersion: strconv.FormatInt(from, 10),
				Annotations:     map[string]string{metav1.InitialEventsAnnotationKey: "true"},
			}})
		}
	}
	events.flush()
	// A bookmark every bookmarkEvery to a watch that asks for them and has
	// had no event, as kube-apiserver's watch cache sends one about every
	// minute: a client tells a quiet stream from a hung one by them.
	var bookmark <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(bookmarkEvery)
		defer t.Stop()
		bookmark = t.C
	}
	for events.err == nil {
		evs, changed, expired := s.store.since(from)
		if expired {
			st := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (the embedded API server keeps the last %d events)", from, s.store.history)).ErrStatus
			st.TypeMeta = statusKind
			events.write(watch.Error, &st)
			events.flush()
			return
		}
		for _, e := range evs {
			if typ, obj := f.translate(e, ns); typ != "" {
				events.write(typ, obj)
			}
			from = e.rv
		}
		if changed == nil { // there were events: go on unless told to stop
			events.flush()
			select {
			case <-s.stopped:
				return
			case <-r.Context().Done():
				return
			case <-timeout:
				return
			default:
			}
			continue
		}
		select {
		case <-changed:
		case <-bookmark:
			events.write(watch.Bookmark, &corev1.ConfigMap{TypeMeta: configMapKind, ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(from, 10)}})
			events.flush()
		case <-s.stopped:
			return
		case <-r.Context().Done():
			return
		case <-timeout:
			return
		}
	}
}

// bookmarkEvery is how often the embedded API server sends a bookmark to a
// quiet watch that asks for them: kube-apiserver's minute.
var bookmarkEvery = time.Minute

// eventWriter writes watch events as kube-apiserver does: each a
// metav1.WatchEvent, its object encoded by the negotiated serializer, the
// event by its stream serializer, one frame each. It remembers the first
// error.
type eventWriter struct {
	info     runtime.SerializerInfo
	frames   io.Writer
	rc       *http.ResponseController
	obj, evt bytes.Buffer
	err      error
}

func (e *eventWriter) write(typ watch.EventType, obj runtime.Object) {
	if e.err != nil {
		return
	}
	e.obj.Reset()
	e.evt.Reset()
	if e.err = e.info.Serializer.Encode(obj, &e.obj); e.err != nil {
		return
	}
	ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: e.obj.Bytes()}}
	if e.err = e.info.StreamSerializer.Serializer.Encode(ev, &e.evt); e.err != nil {
		return
	}
	_, e.err = e.frames.Write(e.evt.Bytes())
}

func (e *eventWriter) flush() {
	if e.err == nil {
		e.err = e.rc.Flush()
	}
}

// filter is a watch's or list's label and field selectors (nil: all).
type filter struct {
	labels labels.Selector
	fields fields.Selector
}

func (f filter) matches(cm *corev1.ConfigMap) bool {
	return (f.labels == nil || f.labels.Matches(labels.Set(cm.Labels))) &&
		(f.fields == nil || f.fields.Matches(fields.Set{"metadata.name": cm.Name, "metadata.namespace": cm.Namespace}))
}

// translate returns what a watch of namespace ns with f sees of e, as a
// real API server does: an object modified into the selection is ADDED,
// out of it DELETED. An empty type means nothing.
func (f filter) translate(e *event, ns string) (watch.EventType, *corev1.ConfigMap) {
	if ns != "" && e.obj.Namespace != ns {
		return "", nil
	}
	if f.labels == nil && f.fields == nil {
		return e.typ, e.obj
	}
	now := f.matches(e.obj)
	if e.typ != watch.Modified {
		if now {
			return e.typ, e.obj
		}
		return "", nil
	}
	before := e.prev != nil && f.matches(e.prev)
	switch {
	case now && before:
		return watch.Modified, e.obj
	case now:
		return watch.Added, e.obj
	case before:
		return watch.Deleted, e.obj
	}
	return "", nil
}

// create serves POST on a namespace's ConfigMaps.
func (s *Server) create(out reply, r *http.Request, ns string) {
	cm, err := readConfigMap(out.w, r)
	if err != nil {
		out.error(err)
		return
	}
	if err := inNamespace(cm, ns); err != nil {
		out.error(err)
		return
	}
	if cm.Name == "" {
		if cm.GenerateName == "" {
			out.error(apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "",
				field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}))
			return
		}
		cm.Name = cm.GenerateName + utilrand.String(5)
	}
	obj, err := s.store.do(k8stesting.NewCreateActionWithOptions(configMaps, ns, cm, metav1.CreateOptions{}))
	out.respond(http.StatusCreated, obj, err)
}

// update serves PUT on a ConfigMap.
func (s *Server) update(out reply, r *http.Request, ns, name string) {
	cm, err := readConfigMap(out.w, r)
	if err != nil {
		out.error(err)
		return
	}
	if err := inNamespace(cm, ns); err != nil {
		out.error(err)
		return
	}
	if cm.Name != name {
		out.error(apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", cm.Name, name)))
		return
	}
	obj, err := s.store.do(k8stesting.NewUpdateActionWithOptions(configMaps, ns, cm, metav1.UpdateOptions{}))
	out.respond(http.StatusOK, obj, err)
}

// patchTypes are the patches served, by Content-Type.
var patchTypes = map[string]types.PatchType{
	string(types.JSONPatchType):           types.JSONPatchType,
	string(types.MergePatchType):          types.MergePatchType,
	string(types.StrategicMergePatchType): types.StrategicMergePatchType,
}

// patch serves PATCH on a ConfigMap, with the fake clientset's patch
// semantics.
func (s *Server) patch(out reply, r *http.Request, ns, name string) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	pt, ok := patchTypes[mt]
	if !ok {
		msg := fmt.Sprintf("the embedded API server takes JSON, merge and strategic merge patches (%s, %s, %s), not %q",
			types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, r.Header.Get("Content-Type"))
		if strings.HasPrefix(mt, "application/apply-patch") {
			msg = "the embedded API server does not serve server-side apply: use a merge, strategic merge or JSON patch"
		}
		out.error(statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, msg))
		return
	}
	body, err := readBody(out.w, r)
	if err != nil {
		out.error(err)
		return
	}
	obj, err := s.store.do(k8stesting.NewPatchActionWithOptions(configMaps, ns, name, pt, body, metav1.PatchOptions{}))
	var st apierrors.APIStatus
	if err != nil && !errors.As(err, &st) {
		err = apierrors.NewBadRequest(fmt.Sprintf("the %s could not be applied to configmaps %q: %v", pt, name, err))
	}
	out.respond(http.StatusOK, obj, err)
}

// delete serves DELETE on a ConfigMap, honouring the preconditions of the
// DeleteOptions body.
func (s *Server) delete(out reply, r *http.Request, ns, name string) {
	if r.URL.Query().Has("dryRun") {
		out.error(errDryRun)
		return
	}
	var opts metav1.DeleteOptions
	body, err := readBody(out.w, r)
	if err != nil {
		out.error(err)
		return
	}
	if len(body) > 0 {
		obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, &deleteOptionsKind, &metav1.DeleteOptions{})
		o, ok := obj.(*metav1.DeleteOptions)
		if err != nil || !ok {
			out.error(apierrors.NewBadRequest(fmt.Sprintf("the body is no DeleteOptions: %v", err)))
			return
		}
		if opts = *o; len(opts.DryRun) > 0 {
			out.error(errDryRun)
			return
		}
	}
	if _, err := s.store.do(k8stesting.NewDeleteActionWithOptions(configMaps, ns, name, opts)); err != nil {
		out.error(err)
		return
	}
	out.object(http.StatusOK, &metav1.Status{
		TypeMeta: statusKind,
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Kind: configMaps.Resource},
	})
}

var errDryRun = apierrors.NewBadRequest("the embedded API server does not serve dry runs")

// deleteOptionsKind is the kind of a DELETE's body, when it has none.
var deleteOptionsKind = metav1.SchemeGroupVersion.WithKind("DeleteOptions")

// readBody reads a request's body, refusing dry runs and bodies over
// maxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.URL.Query().Has("dryRun") {
		return nil, errDryRun
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the request body is larger than %d bytes", maxBodyBytes))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	return body, nil
}

// readConfigMap decodes the ConfigMap of a create or update.
func readConfigMap(w http.ResponseWriter, r *http.Request) (*corev1.ConfigMap, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != runtime.ContentTypeJSON && mt != runtime.ContentTypeProtobuf {
		return nil, statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			fmt.Sprintf("the embedded API server reads %s and %s bodies only, not %q", runtime.ContentTypeJSON, runtime.ContentTypeProtobuf, r.Header.Get("Content-Type")))
	}
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	gvk := configMapKind.GroupVersionKind()
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, &gvk, &corev1.ConfigMap{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is no ConfigMap: %v", err))
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is a %s, not a ConfigMap", obj.GetObjectKind().GroupVersionKind().Kind))
	}
	return cm, nil
}

// inNamespace sets cm's namespace to ns, refusing another.
func inNamespace(cm *corev1.ConfigMap, ns string) error {
	if cm.Namespace == "" {
		cm.Namespace = ns
	}
	if cm.Namespace != ns {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// parseRV parses a resourceVersion of a request.
func parseRV(s string) (int64, error) {
	rv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || rv < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: the embedded API server's are integers", s))
	}
	return rv, nil
}

// tooLarge is kube-apiserver's error for a resourceVersion it has not
// reached, which client-go's reflector recognizes.
func tooLarge(rv, cur int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, cur), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// The serializers the server speaks: client-go's scheme's.
var (
	jsonInfo, _  = runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	protoInfo, _ = runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
)

// negotiate picks the first media type of the Accept headers the server
// speaks (JSON when there is none), skipping those asking for another
// form (as=Table and the like).
func negotiate(accept []string) (runtime.SerializerInfo, bool) {
	if len(accept) == 0 {
		return jsonInfo, true
	}
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || params["as"] != "" {
				continue
			}
			switch mt {
			case runtime.ContentTypeJSON, "application/*", "*/*":
				return jsonInfo, true
			case runtime.ContentTypeProtobuf:
				return protoInfo, true
			}
		}
	}
	return runtime.SerializerInfo{}, false
}

// isTrue reports whether a boolean query parameter is true.
func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// statusError is an error with a Status of code and reason.
func statusError(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

// statusKind is what the server's Status bodies say they are.
var statusKind = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}

// reply writes a response in the negotiated serialization.
type reply struct {
	w    http.ResponseWriter
	info runtime.SerializerInfo
}

// respond writes obj with code, or err.
func (out reply) respond(code int, obj runtime.Object, err error) {
	if err != nil {
		out.error(err)
		return
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		cm.TypeMeta = configMapKind
	}
	out.object(code, obj)
}

// error writes err as a metav1.Status with its HTTP code (500 for an error
// that has none).
func (out reply) error(err error) {
	var st apierrors.APIStatus
	status := apierrors.NewInternalError(err).ErrStatus
	if errors.As(err, &st) {
		status = st.Status()
	}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	status.TypeMeta = statusKind
	out.object(int(status.Code), &status)
}

// object writes obj, whose kind is set, with code.
func (out reply) object(code int, obj runtime.Object) {
	var body bytes.Buffer
	info := out.info
	if err := info.Serializer.Encode(obj, &body); err != nil {
		code = http.StatusInternalServerError
		body.Reset()
		st := apierrors.NewInternalError(fmt.Errorf("encoding the response: %w", err)).ErrStatus
		st.TypeMeta = statusKind
		_ = jsonInfo.Serializer.Encode(&st, &body)
		info = jsonInfo
	}
	out.w.Header().Set("Content-Type", info.MediaType)
	out.w.WriteHeader(code)
	_, _ = out.w.Write(body.Bytes()) // a client gone away is no error of the server's
}
