package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// checkSchema reports where v does not fit the structural OpenAPI v3
// schema s (the subset CRDs use: type, properties with unknown fields
// refused unless x-kubernetes-preserve-unknown-fields, additionalProperties,
// items, required, enum, x-kubernetes-int-or-string), one line per problem
// naming its path.
func checkSchema(path string, v any, s map[string]any) []string {
	if v == nil {
		return nil
	}
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case float64, string:
			return nil
		}
		return []string{fmt.Sprintf("%s: want an integer or a string, have %T", path, v)}
	}
	var errs []string
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", path, v, enum))
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want an object, have %T", path, v))
		}
		for _, r := range asList(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required field %s missing", path, r))
			}
		}
		props, _ := s["properties"].(map[string]any)
		addl, _ := s["additionalProperties"].(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				errs = append(errs, checkSchema(path+"."+k, m[k], ps)...)
			case addl != nil:
				errs = append(errs, checkSchema(path+"."+k, m[k], addl)...)
			case s["x-kubernetes-preserve-unknown-fields"] == true || props == nil && path == ".metadata":
			default:
				errs = append(errs, fmt.Sprintf("%s: unknown field %q", path, k))
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want an array, have %T", path, v))
		}
		items, _ := s["items"].(map[string]any)
		for i, e := range l {
			errs = append(errs, checkSchema(fmt.Sprintf("%s[%d]", path, i), e, items)...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a string, have %T", path, v))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			errs = append(errs, fmt.Sprintf("%s: want an integer, have %v", path, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a boolean, have %T", path, v))
		}
	}
	return errs
}

func asList(v any) []any { l, _ := v.([]any); return l }

func loadYAML(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// templateSchema returns the CRD's openAPIV3Schema for version.
func templateSchema(t *testing.T, version string) map[string]any {
	t.Helper()
	crd := loadYAML(t, "agent-sandbox/testdata/sandboxtemplates.crd.yaml")
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		vm := v.(map[string]any)
		if vm["name"] == version {
			return vm["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		}
	}
	t.Fatalf("the CRD has no version %s", version)
	return nil
}

// TestSandboxTemplateAgainstCRD: the agent-sandbox SandboxTemplate
// example fits the published CRD's schema for its version, its pod
// template decodes strictly as a core/v1 PodTemplateSpec, and its pod and
// containers carry exactly the security context job.yaml ships (the one
// test/k8s runs on a real node).
func TestSandboxTemplateAgainstCRD(t *testing.T) {
	tmpl := loadYAML(t, "agent-sandbox/sandboxtemplate.yaml")
	version := strings.TrimPrefix(tmpl["apiVersion"].(string), "extensions.agents.x-k8s.io/")
	if tmpl["kind"] != "SandboxTemplate" || version == tmpl["apiVersion"] {
		t.Fatalf("not an agent-sandbox SandboxTemplate: %v %v", tmpl["apiVersion"], tmpl["kind"])
	}
	if errs := checkSchema("", tmpl, templateSchema(t, version)); len(errs) > 0 {
		t.Errorf("sandboxtemplate.yaml against the CRD's %s schema:\n%s", version, strings.Join(errs, "\n"))
	}
	pt, _ := json.Marshal(tmpl["spec"].(map[string]any)["podTemplate"])
	dec := json.NewDecoder(bytes.NewReader(pt))
	dec.DisallowUnknownFields()
	var pod corev1.PodTemplateSpec
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("podTemplate: %v", err)
	}
	job := loadYAML(t, "job.yaml")
	jpt, _ := json.Marshal(job["spec"].(map[string]any)["template"])
	var jobPod corev1.PodTemplateSpec
	if err := json.Unmarshal(jpt, &jobPod); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pod.Spec.SecurityContext, jobPod.Spec.SecurityContext) {
		t.Errorf("pod security context differs from job.yaml's: %+v", pod.Spec.SecurityContext)
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if !reflect.DeepEqual(c.SecurityContext, jobPod.Spec.Containers[0].SecurityContext) {
			t.Errorf("container %s: security context differs from job.yaml's", c.Name)
		}
		if c.Image != jobPod.Spec.Containers[0].Image {
			t.Errorf("container %s: image %s, not the agentbox image", c.Name, c.Image)
		}
	}
}

// TestCheckSchemaRefuses: the schema check is not a pass-through: each
// kind of misfit in a copy of the example is named.
func TestCheckSchemaRefuses(t *testing.T) {
	s := templateSchema(t, "v1beta1")
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unknown spec field", func(m map[string]any) { spec(m)["podTemplat"] = map[string]any{} }, `.spec: unknown field "podTemplat"`},
		{"required podTemplate", func(m map[string]any) { delete(spec(m), "podTemplate") }, ".spec: required field podTemplate missing"},
		{"enum", func(m map[string]any) { spec(m)["networkPolicyManagement"] = "Sometimes" }, ".spec.networkPolicyManagement: Sometimes is not one of"},
		{"type", func(m map[string]any) { spec(m)["volumeClaimTemplates"] = "ws" }, ".spec.volumeClaimTemplates: want an array"},
		{"unknown container field", func(m map[string]any) {
			c := spec(m)["podTemplate"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["securityContxt"] = map[string]any{}
		}, `.spec.podTemplate.spec.containers[0]: unknown field "securityContxt"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadYAML(t, "agent-sandbox/sandboxtemplate.yaml")
			c.edit(m)
			errs := strings.Join(checkSchema("", m, s), "\n")
			if !strings.Contains(errs, c.want) {
				t.Errorf("want %q, got:\n%s", c.want, errs)
			}
		})
	}
}

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }
