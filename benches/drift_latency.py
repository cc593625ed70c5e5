#!/usr/bin/env python3
"""Drift latency: time from a `kubectl set image` returning to `/drift` showing the change.

Runs the real binaries against the simulator in a temporary directory. Usage (from the repo):
    cargo build && python3 benches/drift_latency.py [N]
Prints median, p90 and max over N edits (default 20); no pass/fail, figures only.
"""
import subprocess, time, json, urllib.request, os, re, statistics, sys, tempfile
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D = os.environ.get('DRIFTD', os.path.join(REPO, 'target', 'debug', 'driftd'))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
os.chdir(tempfile.mkdtemp(prefix='driftd-latency-'))
sim=subprocess.Popen([D,'sim','--listen','127.0.0.1:0','--kubeconfig-out','kc'],stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,text=True)
while not os.path.exists('kc'): time.sleep(0.05)
env=dict(os.environ,KUBECONFIG='kc')
subprocess.run([D,'commit','--db','d.db','--source','shop','-f',os.path.join(REPO,'examples','app')],check=True,capture_output=True)
subprocess.run(['kubectl','apply','-f',os.path.join(REPO,'examples','app')],env=env,check=True,capture_output=True)
open('c.toml','w').write('database="d.db"\nlisten="127.0.0.1:0"\nsettle_seconds=0.3\n')
srv=subprocess.Popen([D,'serve','--config','c.toml'],env=env,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL,text=True)
url=re.search(r'http://\S+',srv.stdout.readline()).group(0)
def get(p):
    try: return urllib.request.urlopen(url+p).read().decode()
    except Exception as e: return ''
while 'ready' not in get('/readyz'): time.sleep(0.05)
lat=[]
for i in range(N):
    img='nginx:1.%d'%(40+i) if i%2==0 else 'nginx:1.27'
    t0=time.time()
    subprocess.run(['kubectl','-n','shop','set','image','deployment/web','app='+img],env=env,check=True,capture_output=True)
    t1=time.time()
    while True:
        d=json.loads(get('/drift'))
        web=[o for o in d['objects'] if o['name']=='web' and o['kind']=='Deployment']
        ok = (web and web[0]['changes'][0]['live']==img) if img!='nginx:1.27' else not web
        if ok: break
        time.sleep(0.005)
    lat.append((time.time()-t1)*1000)
print('kubectl-return -> /drift updated, ms: median %.1f  p90 %.1f  max %.1f  (n=%d)'%(statistics.median(lat),sorted(lat)[int(0.9*len(lat))-1],max(lat),len(lat)))
srv.terminate(); sim.terminate()
