/* The driver's launch floor as a row of the launch cases (benchmarks.impls.DriverLoop): `n`
 * cuLaunchKernel calls from a C loop, with argument blocks built beforehand, alternating
 * between two where `p2` is given.  What no Python caller can beat on the same machine, in
 * the same run as the Python launches: the driver's own cost per launch (or the device's
 * kernel rate, where the loop fills the queue).  Returns 0 or the first failing status.
 *
 *     cc -O2 -shared -fPIC -o launch_loop.so benchmarks/launch_loop.c
 */
typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shared, void *stream, void **params, void **extra);

int
launch_loop(void *entry, void *f, unsigned block, void *stream, void **p1, void **p2, long n)
{
    launch_fn launch = (launch_fn)entry;
    for (long i = 0; i < n; i++) {
        int err = launch(f, 1, 1, 1, block, 1, 1, 0, stream, (p2 != 0 && (i & 1)) ? p2 : p1, 0);
        if (err) {
            return err;
        }
    }
    return 0;
}
