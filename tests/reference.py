"""Dense reference solutions of the documented objectives (small problems only)."""

from itertools import combinations

import numpy as np


def dense_objective(Xd, L, labeled, y, w, b, gamma_A, gamma_I, s):
    f = Xd @ w + b
    return (np.mean((y - f[labeled]) ** 2) + gamma_A * w @ w + gamma_I * s * f @ L @ f)


def dense_solution(Xd, Lp, labeled, T, gamma_A, gamma_I, s, c=None, r=None):
    """Minimiser of J by its dense normal equations (KKT system with a constraint)."""
    n, d = Xd.shape
    Xt = np.hstack([Xd, np.ones((n, 1))])
    l = len(labeled)
    reg = np.diag(np.r_[np.full(d, gamma_A), 0.0])
    H = Xt[labeled].T @ Xt[labeled] / l + reg + gamma_I * s * Xt.T @ Lp @ Xt
    G = Xt[labeled].T @ T / l
    if c is None:
        return np.linalg.solve(H, G)
    K = np.block([[2 * H, c[:, None]], [c[None, :], np.zeros((1, 1))]])
    out = []
    for j in range(T.shape[1]):
        sol = np.linalg.solve(K, np.r_[2 * G[:, j], r[j]])
        out.append(sol[:-1])
    return np.array(out).T


def random_design(n, d, rng, *, sparse=True, density=0.4):
    """A random sparse (CSR) or dense design matrix with standard normal nonzeros."""
    import scipy.sparse as sp

    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.data.size)
    return X if sparse else X.toarray()


def dense_laplacian(W, normalized):
    """L of an adjacency W (sparse or dense) as the library defines it, densely: D − W, or
    I − D^-½WD^-½ with zero rows and columns for isolated nodes."""
    import scipy.sparse as sp

    W = W.toarray() if sp.issparse(W) else np.asarray(W)
    deg = W.sum(axis=1)
    if not normalized:
        return np.diag(deg) - W
    s = np.zeros_like(deg)
    s[deg > 0] = 1 / np.sqrt(deg[deg > 0])
    return np.diag((deg > 0).astype(float)) - s[:, None] * W * s[None, :]


def random_laplacian(n, rng, *, normalized=False):
    """Dense Laplacian of a random symmetric weighted graph (D − W, or I − D^-½WD^-½)."""
    import scipy.sparse as sp

    W = sp.random(n, n, density=0.15, random_state=rng)
    W = ((W + W.T) * 0.5).toarray()
    np.fill_diagonal(W, 0)
    deg = W.sum(1)
    if normalized:  # L 1 ≠ 0: the bias enters the graph term
        dm = np.where(deg > 0, deg, 1.0) ** -0.5
        return np.eye(n) - dm[:, None] * W * dm[None, :]
    return np.diag(deg) - W


def unit_rows_problem(n=80, seed=1):
    """``(Xu, Lm, rows, y, s)``: Gaussian rows of unit norm in 6 dimensions, a random
    normalised Laplacian, 20 labeled rows with ±1 targets of a random linear rule, and
    ``s = 1/trace(Lm)`` — well posed in feature space, for the ill-conditioned kernel
    problems built on it (large row norms, powers, degrees)."""
    rng = np.random.default_rng(seed)
    Xu = rng.standard_normal((n, 6))
    Xu /= np.linalg.norm(Xu, axis=1, keepdims=True)
    Lm = random_laplacian(n, rng, normalized=True)
    rows = np.sort(rng.choice(n, 20, replace=False))
    y = np.where(Xu[rows] @ rng.standard_normal(6) > 0, 1.0, -1.0)
    return Xu, Lm, rows, y, 1 / np.trace(Lm)


def blobs(n=60, d=8, n_classes=2, seed=0, sparse=True, noise=0.3):
    """Non-negative "documents": each class favours its own block of features."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    centers = np.full((n_classes, d), 0.3)
    for c in range(n_classes):
        centers[c, (2 * c) % d: (2 * c) % d + 2] = 2.0
    y = rng.integers(0, n_classes, n)
    X = np.abs(centers[y] + noise * rng.standard_normal((n, d)))
    X[rng.random((n, d)) < 0.3] = 0.0
    X[:, -1] += 0.1  # no empty rows
    return (sp.csr_matrix(X) if sparse else X), y


def semi_with_validation(y, n_lab, n_val, seed=0):
    """Labels for n_lab random rows (-1 elsewhere) and, for the next n_val, validation labels."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size)
    lab, val = perm[:n_lab], perm[n_lab:n_lab + n_val]
    ys = np.full(y.size, -1)
    ys[lab] = y[lab]
    yv = np.full(y.size, -1)
    yv[val] = y[val]
    return ys, yv


def brute_force_mu(s, gamma_R):
    """Exact minimiser of Σ μ_k s_k + γ_R‖μ‖² on the simplex by enumerating supports:
    on a support S the stationary point is μ_S = (λ − s_S)/(2γ_R) with Σ μ_S = 1; keep the
    feasible one of least objective (γ_R = 0: the best vertex)."""
    m = len(s)
    best, best_val = None, np.inf
    if gamma_R == 0:
        k = int(np.argmin(s))
        return np.eye(m)[k]
    for size in range(1, m + 1):
        for S in combinations(range(m), size):
            S = list(S)
            lam = (2 * gamma_R + s[S].sum()) / size
            mu = np.zeros(m)
            mu[S] = (lam - s[S]) / (2 * gamma_R)
            if np.all(mu >= -1e-15):
                val = mu @ s + gamma_R * mu @ mu
                if val < best_val:
                    best, best_val = mu, val
    return best
