"""Zero-shot table of a dynsparse run folder: per-task acc, the mean of the five
tasks and of the four with 1000 items (copa has 100), each with its standard
error (independent-sample; paired differences between rows are tighter).

usage: python3 results/dejavu/zeroshot_summary.py results/dejavu/zeroshot-opt/results.jsonl
"""
import csv, json, math, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
acc = collections.defaultdict(dict)
for r in rows:
    if r.get('kind') != 'result' or r.get('metric') != 'acc' or r.get('status') != 'ok':
        continue
    p = r['params']
    key = (r['method'], p.get('mlp_keep', p.get('mlp_keep_layers', '')), p.get('selector', ''))
    n = r.get('n') or 0
    acc[key][r['task']] = (r['value'], n)
tasks = ['piqa', 'copa', 'winogrande', 'arc_easy', 'hellaswag']
print('| method | MLP keep | selector | ' + ' | '.join(tasks) + ' | mean of 5 (± se) | 4 tasks without copa (± se) |')
print('| --- | --- | --- |' + ' ---: |' * (len(tasks) + 2))
for key, t in acc.items():
    vals = [t[k][0] for k in tasks]
    four = [k for k in tasks if k != 'copa']
    m4 = sum(t[k][0] for k in four) / 4
    se4 = math.sqrt(sum(t[k][0] * (1 - t[k][0]) / t[k][1] for k in four)) / 4
    se = math.sqrt(sum(v * (1 - v) / t[k][1] for v, k in zip(vals, tasks))) / len(tasks)
    print(f"| {key[0]} | {key[1]} | {key[2]} | " + ' | '.join(f'{v:.3f}' for v in vals) + f" | {sum(vals)/len(vals):.3f} ± {se:.3f} | {m4:.3f} ± {se4:.3f} |")
