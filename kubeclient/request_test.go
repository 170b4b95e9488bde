package kubeclient

import "testing"

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, path, query string
		want                request
	}{
		{"GET", "/api/v1/namespaces/demo/configmaps/cm-1", "", request{verb: "get", resource: "configmaps", namespace: "demo", name: "cm-1", template: "/api/v1/namespaces/{namespace}/configmaps/{name}"}},
		{"GET", "/api/v1/namespaces/demo/configmaps", "limit=500", request{verb: "list", resource: "configmaps", namespace: "demo", template: "/api/v1/namespaces/{namespace}/configmaps"}},
		{"GET", "/api/v1/namespaces/demo/configmaps", "allowWatchBookmarks=true&watch=true", request{verb: "watch", resource: "configmaps", namespace: "demo", template: "/api/v1/namespaces/{namespace}/configmaps"}},
		{"GET", "/api/v1/configmaps", "watch=1", request{verb: "watch", resource: "configmaps", template: "/api/v1/configmaps"}},
		{"POST", "/api/v1/namespaces/demo/configmaps", "", request{verb: "create", resource: "configmaps", namespace: "demo", template: "/api/v1/namespaces/{namespace}/configmaps"}},
		{"PUT", "/apis/apps/v1/namespaces/demo/deployments/web/status", "", request{verb: "update", group: "apps", resource: "deployments/status", namespace: "demo", name: "web", template: "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"}},
		{"PATCH", "/apis/apps/v1/namespaces/demo/deployments/web/scale", "", request{verb: "patch", group: "apps", resource: "deployments/scale", namespace: "demo", name: "web", template: "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"}},
		{"DELETE", "/api/v1/namespaces/demo/pods", "", request{verb: "deletecollection", resource: "pods", namespace: "demo", template: "/api/v1/namespaces/{namespace}/pods"}},
		{"DELETE", "/api/v1/namespaces/demo/pods/p", "", request{verb: "delete", resource: "pods", namespace: "demo", name: "p", template: "/api/v1/namespaces/{namespace}/pods/{name}"}},
		// A proxy's path, or the rest after any subresource, is no part of
		// the resource (one series per proxied path otherwise).
		{"GET", "/api/v1/namespaces/demo/services/web:80/proxy/metrics/v2", "", request{verb: "get", resource: "services/proxy", namespace: "demo", name: "web:80", template: "/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}"}},
		{"GET", "/api/v1/nodes/node-1/proxy/stats/summary", "", request{verb: "get", resource: "nodes/proxy", name: "node-1", template: "/api/v1/nodes/{name}/proxy/{path}"}},
		// The namespace resource itself.
		{"GET", "/api/v1/namespaces/demo", "", request{verb: "get", resource: "namespaces", name: "demo", template: "/api/v1/namespaces/{name}"}},
		{"GET", "/api/v1/namespaces", "", request{verb: "list", resource: "namespaces", template: "/api/v1/namespaces"}},
		{"PUT", "/api/v1/namespaces/demo/finalize", "", request{verb: "update", resource: "namespaces/finalize", name: "demo", template: "/api/v1/namespaces/{name}/finalize"}},
		// Cluster-scoped, in a group.
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "", request{verb: "get", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "admin", template: "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"}},
		// No resource: discovery and the like.
		{"GET", "/api", "", request{template: "/api"}},
		{"GET", "/apis/apps/v1", "", request{template: "/apis/apps/v1"}},
		{"GET", "/version", "", request{template: "/version"}},
		{"GET", "/openapi/v3", "", request{template: "/openapi/v3"}},
	} {
		got := parseRequest(tc.method, tc.path, tc.query, true)
		if got != tc.want {
			t.Errorf("parseRequest(%s %s?%s)\n got %+v\nwant %+v", tc.method, tc.path, tc.query, got, tc.want)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add("GET", "/api/v1/namespaces/a/configmaps/b", "watch=true")
	f.Add("PATCH", "/apis/g/v1/x/y/z/w", "")
	f.Add("DELETE", "//", "&&watch=")
	f.Fuzz(func(t *testing.T, method, path, query string) {
		r := parseRequest(method, path, query, true)
		if r.verb == "" && r.resource != "" || r.verb != "" && r.resource == "" {
			t.Fatalf("verb %q with resource %q: both or neither", r.verb, r.resource)
		}
		if r.template == "" && path != "" {
			t.Fatalf("no template for %q", path)
		}
	})
}
