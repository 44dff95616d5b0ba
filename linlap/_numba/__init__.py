"""numba compute kernels: CSR products (:mod:`.csr`), Laplacian passes (:mod:`.graph`),
Gram blocks of the kernel mode (:mod:`.gram`), CG block updates (:mod:`.cg`), all
threaded through :func:`.dispatch.threaded`."""
