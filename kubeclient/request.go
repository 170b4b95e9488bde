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
// namespace object itself. Other paths
// (discovery, /version, /openapi) name no resource: verb and resource stay
// empty and the template is the path.
func parseRequest(method, path, rawQuery string) request {
	r := request{template: path}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var prefix []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		prefix, parts = parts[:2], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.group = parts[1]
		prefix, parts = parts[:3], parts[3:]
	default:
		return r
	}
	tmpl := append([]string{""}, prefix...)
	// namespaces/{name}/status and /finalize are subresources of the
	// namespace itself, as the API server reads them.
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		r.namespace = parts[1]
		tmpl = append(tmpl, "namespaces", "{namespace}")
		parts = parts[2:]
	}
	r.resource = parts[0]
	tmpl = append(tmpl, parts[0])
	if len(parts) >= 2 {
		r.name = parts[1]
		tmpl = append(tmpl, "{name}")
		if len(parts) >= 3 {
			r.resource += "/" + parts[2]
			tmpl = append(tmpl, parts[2:]...)
		}
	}
	r.template = strings.Join(tmpl, "/")

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
