/* atomwatch-ci: queue benchmark jobs, wait for hosts and gate a commit from CI. Everything is in
 * the aw_ci library (cli.c); main() only ignores SIGPIPE (a closed stdout must not kill the
 * gate before it writes its files). */
#include <signal.h>
#include <string.h>

#include "ci.h"

int main(int argc, char **argv)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	return aw_ci_main(argc, argv);
}
