/*
 * The pod sandbox's placeholder process: holds the pod's namespaces open,
 * reaps the orphans re-parented to it (it is the pod's init when the pid
 * namespace is shared) and exits 0 on SIGINT or SIGTERM. Signals are taken
 * synchronously with sigwaitinfo, so no handler runs at an arbitrary point.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		perror("pause: sigprocmask");
		return 1;
	}
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGINT || sig == SIGTERM)
			return 0;
		if (sig == SIGCHLD)
			while (waitpid(-1, NULL, WNOHANG) > 0) {
			}
	}
}
