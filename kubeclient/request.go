package kubeclient

import (
	"net/http"
	"strings"
)

// request is what a Kubernetes API request is about, read from its method
// and path.
type request struct {
	verb      string // "" for a path that names no resource
	group     string
	resource  string // with "/subresource"
	namespace string
	name      string
	template  string // the path with {namespace} and {name} in place of the values
}

// parseRequest reads the Kubernetes verb, group, resource, namespace and name
// of an API request, as the API server's RequestInfo does, from
// /api/{version}/... and /apis/{group}/{version}/...:
//
//	[namespaces/{namespace}/]{resource}[/{name}[/{subresource}]]
//
// namespaces/{name}, with its subresources status and finalize, is the
// namespace object itself. Other paths (discovery, /version, /openapi) name
// no resource: verb and resource stay empty and the template is the path.
// The template is built only when withTemplate is true (for a span).
func parseRequest(method, path, rawQuery string, withTemplate bool) request {
	r := request{template: path}
	rest := strings.Trim(path, "/")
	first, rest, _ := strings.Cut(rest, "/")
	var prefix string // "/api/v1" or "/apis/{group}/{version}"
	switch first {
	case "api":
		version, after, ok := strings.Cut(rest, "/")
		if !ok || version == "" || after == "" {
			return r
		}
		prefix, rest = "/api/"+version, after
	case "apis":
		group, after, ok := strings.Cut(rest, "/")
		if !ok {
			return r
		}
		version, after, ok := strings.Cut(after, "/")
		if !ok || version == "" || after == "" {
			return r
		}
		r.group = group
		prefix, rest = "/apis/"+group+"/"+version, after
	default:
		return r
	}
	var seg [3]string // resource, name, first part of the subresource
	var sub string    // the subresource
	namespaced := false
	if ns, after, ok := strings.Cut(rest, "/"); ok && ns == "namespaces" {
		// namespaces/{namespace}/{resource}...: unless it is
		// namespaces/{name}/status or /finalize.
		if name, after2, ok := strings.Cut(after, "/"); ok {
			if next, _, _ := strings.Cut(after2, "/"); next != "status" && next != "finalize" && after2 != "" {
				r.namespace, rest, namespaced = name, after2, true
			}
		}
	}
	seg[0], rest, _ = strings.Cut(rest, "/")
	seg[1], sub, _ = strings.Cut(rest, "/")
	// The subresource is one segment, as the API server's RequestInfo has
	// it; what follows (a proxy's or a pod exec's path) is no part of it:
	// one series per proxied path otherwise.
	sub, more, _ := strings.Cut(sub, "/")
	r.resource, r.name = seg[0], seg[1]
	if r.resource == "" {
		r.group = ""
		return r
	}
	if sub != "" && r.name != "" {
		r.resource += "/" + sub
	}
	if withTemplate {
		var b strings.Builder
		b.WriteString(prefix)
		if namespaced {
			b.WriteString("/namespaces/{namespace}")
		}
		b.WriteString("/" + seg[0])
		if r.name != "" {
			b.WriteString("/{name}")
			if sub != "" {
				b.WriteString("/" + sub)
			}
			if more != "" {
				b.WriteString("/{path}")
			}
		}
		r.template = b.String()
	}

	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatch(rawQuery):
			r.verb = "watch"
		case r.name == "":
			r.verb = "list"
		default:
			r.verb = "get"
		}
	case http.MethodPost:
		r.verb = "create"
	case http.MethodPut:
		r.verb = "update"
	case http.MethodPatch:
		r.verb = "patch"
	case http.MethodDelete:
		if r.name == "" {
			r.verb = "deletecollection"
		} else {
			r.verb = "delete"
		}
	default:
		r.verb = strings.ToLower(method)
	}
	return r
}

// isWatch reports whether a query asks for a watch (watch=true or watch=1).
func isWatch(rawQuery string) bool {
	for q := range strings.SplitSeq(rawQuery, "&") {
		if v, ok := strings.CutPrefix(q, "watch="); ok {
			return v == "true" || v == "1"
		}
	}
	return false
}
