"""``linlap top-features``: the highest- and lowest-weighted terms per class."""

from ._common import _load_model, _model_input_kind


def _top_features(args):
    import numpy as np

    from ..inspection import _split

    model, _ = _load_model(args.model)
    est, names = _split(model)
    if not hasattr(est, "coef_"):
        raise ValueError(f"{args.model}: a {type(est).__name__} has no feature weights "
                         f"(kernel models weigh documents, not terms)")
    coef = np.atleast_2d(np.asarray(est.coef_))
    classes = [str(c) for c in est.classes_]
    if names is None:
        why = ("the model's vectorizer hashes terms" if _model_input_kind(model) == "text"
               else "the model was fit on an svmlight matrix")
        print(f"(term names are unavailable: {why}; showing feature indices)")
        names = np.array([f"feature {j}" for j in range(coef.shape[1])], dtype=object)
    if coef.shape[0] == 1 and len(classes) == 2:
        rows = [(f"{classes[1]} (positive weights; negative weights point to "
                 f"{classes[0]})", coef[0])]
    else:
        rows = list(zip(classes, coef))
    n = min(args.n, coef.shape[1])
    for title, w in rows:
        order = np.argsort(-w, kind="stable")
        print(f"class {title}")
        print("  highest:")
        for j in order[:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
        print("  lowest:")
        for j in order[::-1][:n]:
            print(f"    {w[j]:+10.4f}  {names[j]}")
    return 0
