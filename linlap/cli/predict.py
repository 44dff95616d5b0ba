"""``linlap predict`` and ``linlap evaluate``: a saved model on new documents."""

import sys
import time

from ..solvers._problem import predict_index
from ._common import _load_model, _model_batches, _output, _Reporter


def _predict(args):
    import csv

    import numpy as np

    rep = _Reporter(args.quiet)
    model = _load_model(args.model)
    est = model.steps[-1][1] if hasattr(model, "steps") else model
    classes = [str(c) for c in est.classes_]
    total = 0
    t = time.perf_counter()
    with _output(args.out) as out:
        writer = csv.writer(out, lineterminator="\n")
        if args.decision_values:
            if len(classes) == 2:
                writer.writerow(["prediction", f"decision_{classes[1]}"])
            else:
                writer.writerow(["prediction"] + [f"decision_{c}" for c in classes])
        bar = rep.bar(desc="predicting")
        try:
            for batch in _model_batches(model, args, args.data):
                if not len(batch):
                    continue
                if args.decision_values:
                    D = np.atleast_1d(model.decision_function(batch.data))
                    if D.ndim == 1:
                        D = D[:, None]
                    for i, row in zip(predict_index(D), D):
                        writer.writerow([classes[i]] + [f"{v:.6g}" for v in row])
                else:
                    for label in model.predict(batch.data):
                        writer.writerow([label])
                total += len(batch)
                bar.update(len(batch))
        finally:
            bar.close()
    rep.line(f"predicted {total} documents in {time.perf_counter() - t:.1f} s"
             + (f" → {args.out}" if args.out not in (None, "-") else ""))
    return 0


# ----------------------------------------------------------------------------- evaluate

def _evaluate(args):
    from sklearn.metrics import (accuracy_score, classification_report, confusion_matrix,
                                 f1_score)

    rep = _Reporter(args.quiet)
    model = _load_model(args.model)
    y_true, y_pred = [], []
    bar = rep.bar(desc="evaluating")
    try:
        for batch in _model_batches(model, args, args.data, need_labels=True):
            keep = [i for i, lab in enumerate(batch.labels) if lab is not None]
            if not keep:
                continue
            data = batch.data[keep] if hasattr(batch.data, "tocsr") else \
                [batch.data[i] for i in keep]
            y_pred.extend(str(p) for p in model.predict(data))
            y_true.extend(batch.labels[i] for i in keep)
            bar.update(len(batch))
    finally:
        bar.close()
    if not y_true:
        raise ValueError(f"{args.data}: no labeled rows to evaluate on (column "
                         f"{args.label_column!r})")
    labels = sorted(set(y_true) | set(y_pred))
    print(f"{len(y_true)} labeled documents in {args.data}")
    print(f"accuracy  {accuracy_score(y_true, y_pred):.4f}")
    macro = f1_score(y_true, y_pred, average="macro", labels=labels, zero_division=0)
    print(f"macro-F1  {macro:.4f}")
    print()
    print(classification_report(y_true, y_pred, labels=labels, digits=4, zero_division=0))
    cm = confusion_matrix(y_true, y_pred, labels=labels)
    width = max(max(len(lab) for lab in labels), max(len(str(v)) for v in cm.ravel()), 4)
    print("confusion matrix (rows: true, columns: predicted)")
    print(" " * width + "  " + "  ".join(f"{lab:>{width}}" for lab in labels))
    for lab, row in zip(labels, cm):
        print(f"{lab:>{width}}  " + "  ".join(f"{int(v):>{width}}" for v in row))
    unknown = sorted(set(y_true) - {str(c) for c in (model.steps[-1][1] if hasattr(
        model, "steps") else model).classes_})
    if unknown:
        print(f"note: classes absent from the model: {', '.join(unknown)}", file=sys.stderr)
    return 0
