"""``linlap predict`` and ``linlap evaluate``: a saved model on new documents."""

import sys
import time

from ._common import (_data_name, _model_classes, _model_input, _output, _refuse_to_replace_inputs,
                      _Reporter, _stdout, UsageError)


def _predict(args):
    import csv

    import numpy as np

    from ..solvers._problem import predict_index

    _refuse_to_replace_inputs("--out", args.out, [(args.model, "model file (MODEL)"),
                                                  (args.data, "input file (DATA)")])
    rep = _Reporter(args.quiet)
    model, _, batches = _model_input(args)
    classes = _model_classes(model)
    # the plain output is the bare labels, one per line (CSV quoting only with a header)
    plain = not (args.ids or args.decision_values)
    if plain and any("\n" in str(c) or "\r" in str(c) for c in classes):
        raise UsageError("a class name of the model contains a line break, which the plain "
                         "output (one label per line) cannot hold: add --ids for CSV output")
    total = 0
    t = time.perf_counter()
    with _output(args.out) as out:
        writer = csv.writer(out, lineterminator="\n")
        header = ["id"] if args.ids else []
        if args.decision_values:
            header += ["prediction"] + [f"decision_{c}" for c in
                                        (classes[1:] if len(classes) == 2 else classes)]
        elif args.ids:
            header += ["prediction"]
        if header:
            writer.writerow(header)
        bar = rep.bar(desc="predicting")
        try:
            for batch in batches:
                if not len(batch):
                    continue
                if plain:
                    out.writelines(f"{label}\n" for label in model.predict(batch.data))
                else:
                    if args.decision_values:
                        D = np.atleast_1d(model.decision_function(batch.data))
                        if D.ndim == 1:
                            D = D[:, None]
                        rows = ([classes[i]] + [f"{v:.6g}" for v in row]
                                for i, row in zip(predict_index(D), D))
                    else:
                        rows = ([label] for label in model.predict(batch.data))
                    if args.ids:
                        rows = ([id_] + row for id_, row in zip(batch.ids, rows))
                    writer.writerows(rows)
                total += len(batch)
                bar.update(len(batch))
        finally:
            bar.close()
    rep.line(f"predicted {total} documents in {time.perf_counter() - t:.1f} s"
             + (f" → {args.out}" if args.out not in (None, "-") else ""))
    return 0


# ----------------------------------------------------------------------------- evaluate

def _evaluate(args):
    rep = _Reporter(args.quiet)
    model, unlabeled_label, batches = _model_input(args, need_labels=True)
    classes = _model_classes(model)
    if unlabeled_label in classes:  # its rows would be skipped: a class left out unseen
        why = ("the default of svmlight input" if args.unlabeled_label is None
               else "--unlabeled-label")
        raise UsageError(f"{unlabeled_label!r} is a class of the model, but it marks the "
                         f"unlabeled rows of {_data_name(args)} ({why}), which evaluate skips; "
                         f"pass --unlabeled-label with a value that is not a class (the "
                         f"one the fit used)")
    y_true, y_pred = [], []
    bar = rep.bar(desc="evaluating")
    try:
        for batch in batches:
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
        raise ValueError(f"{_data_name(args)}: no labeled rows to evaluate on (column "
                         f"{args.label_column!r})")
    unknown = sorted(set(y_true) - set(classes))
    if len(unknown) == len(set(y_true)):
        raise ValueError(f"{_data_name(args)}: none of its labels ({_some(unknown)}) is a class of "
                         f"the model ({_some(classes)}); was the model fit on other label "
                         f"names, or is the label column (--label-column) another one?")
    labels = sorted(set(y_true) | set(y_pred))
    with _stdout():  # class folder names that are not UTF-8 print as their bytes
        _print_report(args, y_true, y_pred, labels)
    if unknown:
        print(f"note: classes absent from the model: {', '.join(unknown)}", file=sys.stderr)
    return 0


def _print_report(args, y_true, y_pred, labels):
    """evaluate's report on standard output."""
    from sklearn.metrics import (accuracy_score, classification_report, confusion_matrix,
                                 f1_score)

    print(f"{len(y_true)} labeled documents in {_data_name(args)}")
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


def _some(names, shown=5):
    """Up to ``shown`` names, comma-separated, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f", … ({more} more)" if more > 0 else "")
