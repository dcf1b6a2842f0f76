package sandbox

import "github.com/agentbox/agentbox/internal/sandbox/helper"

// CacheLayer is one host build or package cache shown to the command
// copy-on-write: an overlay in the run's mount namespace with the host's
// cache as its lowest layer, the agent's own cache directory (Target,
// where the tool looks) above it and the agent's layer (Upper) on top, so
// the first build is warm and nothing the run writes reaches the host's
// cache (helper/cachelayers.go). A regular user's run gets a user
// namespace for it, as for a review run's overlay.
type CacheLayer = helper.CacheLayer

// MountNamespaceAvailable says whether a run here can have a mount
// namespace of its own for overlays: root with CAP_SYS_ADMIN, or a
// regular user where unprivileged user namespaces can be made (nil), or
// why not.
func MountNamespaceAvailable() error {
	if HasCapSysAdmin() {
		return nil
	}
	return UserNSAvailable()
}
