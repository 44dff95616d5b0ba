"""Dense reference solutions of the documented objectives (small problems only)."""

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
