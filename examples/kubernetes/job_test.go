// Package kubernetes_test checks the Kubernetes example against the
// Kubernetes API types: a misspelt or misplaced field fails here rather
// than in a cluster.
package kubernetes_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestJobDecodesStrictly: job.yaml is a batch/v1 Job with no field the
// API does not know, and its agent container has the security context
// the container-runtime harness (TestUnderContainerRuntime) runs agentbox
// with: a non-root user, no privilege escalation (no_new_privs), every
// capability dropped, the runtime's default seccomp profile.
func TestJobDecodesStrictly(t *testing.T) {
	b, err := os.ReadFile("job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		t.Fatalf("job.yaml: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var job batchv1.Job
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("job.yaml is not a valid Job: %v", err)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("apiVersion %q kind %q", job.APIVersion, job.Kind)
	}
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q: a failed agent must not be rerun over its own work", spec.RestartPolicy)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user (the harness runs uid 1000)")
	}
	var agent *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == "agent" {
			agent = &spec.Containers[i]
		}
	}
	if agent == nil {
		t.Fatal("no container named agent")
	}
	sc := agent.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false (no_new_privs, as in the harness)")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Error("the agent container must drop every capability and add none")
	}
	if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("seccompProfile must be RuntimeDefault (the profile the harness applies)")
	}
	if len(agent.Args) == 0 || agent.Args[0] != "run" {
		t.Errorf("the agent container's args do not start with run: %v", agent.Args)
	}
}
