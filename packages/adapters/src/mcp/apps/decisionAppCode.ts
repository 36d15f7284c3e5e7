/**
 * The decision app's own code, as the text its HTML document inlines: the
 * style sheet and the script (plain browser JavaScript, no framework, no
 * imports). The script speaks the MCP Apps view protocol to its host over
 * `postMessage` (JSON-RPC 2.0: `ui/initialize`, `ui/notifications/initialized`,
 * `ui/notifications/tool-result`, `ui/notifications/size-changed`, and
 * `tools/call`, which the host forwards to this server), accepts messages
 * from its parent window only, and builds every element with DOM calls and
 * `textContent`, so nothing the server or a requester wrote is ever parsed
 * as HTML. It renders the inbox (`baton_inbox`), one decision with its form
 * built from the decision's schema (`baton_decide {id}`), what an answer, a
 * hand-over or a refusal came to, and the requester's run: a flow's waiting
 * result, then `baton_run_status {id}` read again through the host every
 * `pollMs` while the run waits and the app is visible (the state, who it
 * waits for, deadlines, the steps that ran, the outcome). Approve, decline and
 * hand-over call `baton_decide {id, key, answer}` and `baton_delegate` back
 * through the host, so the server checks every rule. Kept in this module, apart
 * from the document (`decisionApp.ts`), so that its bytes and CSP hashes have
 * one source.
 */

/** The app's style sheet. */
export const APP_STYLE = `:root{color-scheme:light dark;--fg:#1b1f24;--muted:#5b6470;--line:#d7dce2;--bg:#fff;--accent:#0b5cad;--bad:#a4161a;--good:#1a7f37}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ee;--muted:#a2abb6;--line:#3a414a;--bg:#16191d;--accent:#6cb0ff;--bad:#ff8a8a;--good:#6fdc8c}}
*{box-sizing:border-box}body{margin:0;padding:12px;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:17px;margin:0 0 8px}h2{font-size:14px;margin:12px 0 4px}p{margin:6px 0}
.flow{color:var(--muted);font-size:12px;margin:0 0 2px}dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}
dl>div{display:contents}dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}code{font-size:12px}
ul.inbox{list-style:none;margin:0;padding:0}ul.inbox li{border-top:1px solid var(--line);padding:8px 0;display:flex;gap:8px;align-items:flex-start;justify-content:space-between}
fieldset{border:0;margin:0 0 10px;padding:0;min-width:0}label,legend{display:block;font-weight:600;margin-bottom:2px;padding:0}.desc{color:var(--muted);font-size:12px;font-weight:400}
input[type=text],input[type=email],input[type=url],input[type=number],input[type=date],input[type=datetime-local],select,textarea{width:100%;padding:6px;border:1px solid var(--line);border-radius:6px;font:inherit;color:inherit;background:transparent}
.choice{display:inline-flex;gap:4px;margin-right:12px;font-weight:400}
.actions{display:flex;flex-wrap:wrap;gap:8px;margin-top:8px}button{font:inherit;padding:6px 12px;border-radius:6px;border:1px solid var(--line);background:transparent;color:inherit;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}button:disabled{opacity:.6;cursor:default}
.notice{border-left:4px solid var(--accent);padding:6px 10px;margin:8px 0}.notice.refused,.problem{border-color:var(--bad);color:var(--bad)}.notice.recorded{border-color:var(--good)}
.problem{border-left:4px solid;padding:4px 8px}details{margin-top:12px}.hint{color:var(--muted);font-size:12px}.steps ol{margin:4px 0;padding-left:20px;font-size:13px}`;

/** The app's script. */
export const APP_SCRIPT = `(function(){'use strict';
var root=document.getElementById('app');var seq=0;var waiting={};var current=null;
function send(m){window.parent.postMessage(m,'*')}
function request(method,params){var id=++seq;send({jsonrpc:'2.0',id:id,method:method,params:params});return new Promise(function(ok,fail){waiting[id]={ok:ok,fail:fail}})}
function notify(method,params){send(params===undefined?{jsonrpc:'2.0',method:method}:{jsonrpc:'2.0',method:method,params:params})}
window.addEventListener('message',function(ev){if(ev.source!==window.parent)return;var m=ev.data;if(!m||m.jsonrpc!=='2.0')return;
if(m.method===undefined&&m.id!==undefined&&waiting[m.id]){var w=waiting[m.id];delete waiting[m.id];if(m.error)w.fail(new Error(m.error.message||'Error'));else w.ok(m.result);return}
if(m.method==='ui/notifications/tool-result'){show(m.params);return}
if(m.id!==undefined&&m.method!==undefined){if(m.method==='ui/resource-teardown'){clearTimeout(timer);timer=null}if(m.method==='ui/resource-teardown'||m.method==='ping')send({jsonrpc:'2.0',id:m.id,result:{}});else send({jsonrpc:'2.0',id:m.id,error:{code:-32601,message:'Method not found'}})}});
function el(tag,attrs,kids){var e=document.createElement(tag);if(attrs)for(var k in attrs){if(attrs[k]===undefined||attrs[k]===null||attrs[k]===false)continue;if(k==='text')e.textContent=String(attrs[k]);else e.setAttribute(k,attrs[k]===true?'':String(attrs[k]))}
(kids||[]).forEach(function(c){if(c!==null&&c!==undefined&&c!=='')e.appendChild(typeof c==='string'?document.createTextNode(c):c)});return e}
function when(iso){if(!iso)return '';var d=new Date(iso);return isNaN(d)?String(iso):d.toISOString().slice(0,16).replace('T',' ')+' UTC'}
var last='';function size(){var r=document.body.getBoundingClientRect();var w=Math.ceil(r.width),h=Math.ceil(r.height);if(w+'x'+h===last)return;last=w+'x'+h;notify('ui/notifications/size-changed',{width:w,height:h})}
if(window.ResizeObserver)new ResizeObserver(size).observe(document.body);
function render(nodes){root.replaceChildren.apply(root,nodes);size()}
function text(result){return ((result&&result.content)||[]).filter(function(c){return c&&c.type==='text'}).map(function(c){return c.text}).join('\\n')}
function notice(kind,title,sentence){return el('section',{class:'notice '+kind,'data-outcome':kind,role:kind==='refused'?'alert':'status'},[el('h1',{text:title}),el('p',{class:'sentence',text:sentence})])}
function show(result){var s=(result&&result.structuredContent)||{};
if(s.decisions)return render(inbox(s.decisions));
if(s.decision){current=s.decision;return render(decision(s.decision))}
if(result&&result.isError){if(s.status==='invalid'&&current)return render(decision(current,s));return render([notice('refused',s.title||'Not possible',s.message||text(result)),back()])}
if(s.status==='recorded')return render([notice('recorded','Decision recorded',s.message||text(result)),back()]);
if(s.status==='declined')return render([notice('declined','Not recorded',s.message||text(result)),back()]);
if(s.status==='handed')return render([notice('recorded','Handed over',text(result)),back()]);
if(s.run)return render(run(s.run));
if((s.status==='waiting'||s.status==='working')&&typeof s.id==='string'){render([el('p',{class:'hint',text:text(result)})]);return follow(s.id,0)}
render([el('p',{text:text(result)})])}
var timer=null;function follow(id,ms){clearTimeout(timer);timer=setTimeout(function(){if(document.visibilityState==='hidden'){document.addEventListener('visibilitychange',function again(){if(document.visibilityState==='hidden')return;document.removeEventListener('visibilitychange',again);follow(id,0)});return}
request('tools/call',{name:'baton_run_status',arguments:{id:id}}).then(show,function(){follow(id,Math.max(ms,5000))})},ms)}
var VIA={call:'your call',resume:'your resume',app:'a decision in the app',decide:'a decision',decide_api:'a decision through the API',decide_page:'a decision on the page',withdraw:'your withdrawal',timer:'a deadline',operator:'an operator',event:'an event',delegate:'a hand-over'};
function who(w){return w.role?w.role:w.event?'the event '+w.event:'a decision ('+w.key+')'}
function run(r){var waits=r.waitingFor||[];var out=[el('p',{class:'flow',text:r.flowTitle?r.flowTitle+' ('+r.flow+')':r.flow}),el('h1',{class:'summary',text:r.summary||r.flowTitle||r.flow})];
if(r.outcome)out.push(el('section',{class:'notice '+(r.outcome.isError?'refused':'recorded'),'data-outcome':r.status,role:'status'},[el('h1',{text:r.status==='completed'?'Finished':'Ended: '+r.status}),el('p',{class:'sentence',text:r.outcome.text})]));
else out.push(el('section',{class:'notice','data-outcome':'waiting',role:'status'},[el('h1',{class:'waiting',text:waits.length?'Waiting for '+waits.map(who).join(' and '):'Working'}),el('p',{class:'hint',text:'Updates here while it waits.'})]));
var facts=[row('Request',r.id,'request'),row('State',r.state,'state'),row('Started',when(r.createdAt)),row('Last change',when(r.updatedAt))];if(r.dueAt)facts.push(row('Next deadline',when(r.dueAt),'due'));out.push(el('dl',{class:'facts'},facts));
if(waits.length)out.push(el('section',{class:'waits'},[el('h2',{text:'Waiting for'}),el('ul',{class:'inbox'},waits.map(function(w){var f=[who(w)];if(w.deadline)f.push('decide by '+when(w.deadline));if(w.quorum)f.push(w.quorum.approvals+' of '+w.quorum.required+' approvals');
return el('li',{'data-key':w.key},[el('div',{},[el('div',{text:w.message||w.key}),el('div',{class:'hint',text:f.join(' \u00b7 ')})])])}))]));
if(r.steps&&r.steps.length)out.push(el('section',{class:'steps'},[el('h2',{text:'Steps'}),el('ol',{},r.steps.map(function(x){return el('li',{},[when(x.at)+' \u00b7 '+(VIA[x.via]||x.via)+(x.states.length?': '+x.states.join(' \u2192 '):'')])}))]));
if(r.status==='waiting')follow(r.id,Math.max(1000,r.pollMs||5000));else clearTimeout(timer);return out}
function back(){return el('p',{},[button('Back to your inbox','',function(){call('baton_inbox',{})})])}
function button(label,cls,onclick){var b=el('button',{type:'button',class:cls||undefined,text:label});b.addEventListener('click',onclick);return b}
function call(name,args){var bs=root.querySelectorAll('button');for(var i=0;i<bs.length;i++)bs[i].disabled=true;
return request('tools/call',{name:name,arguments:args}).then(show,function(e){render([notice('refused','The host could not reach Baton',e.message),back()])})}
function inbox(items){var live=items.filter(function(i){return i.unreadable===undefined});
if(live.length===0)return [el('h1',{text:'No decisions are waiting for you'})];
return [el('h1',{text:live.length===1?'1 decision waits for you':live.length+' decisions wait for you'}),el('ul',{class:'inbox'},live.map(function(i){
var facts=[i.flow+' \\u00b7 '+i.key];if(i.deadline)facts.push('decide by '+when(i.deadline));if(i.quorum)facts.push(i.quorum.approvals+' of '+i.quorum.required+' approvals');
if(i.delegated)facts.push(i.delegated.kind==='handover'?'handed to you by '+(i.delegated.by||i.delegated.onBehalfOf):'for '+i.delegated.onBehalfOf+', who is away');
return el('li',{'data-request':i.id,'data-key':i.key},[el('div',{},[el('div',{text:i.message}),el('div',{class:'hint',text:facts.join(' \\u00b7 ')})]),button('Open','primary',function(){call('baton_decide',{id:i.id,key:i.key})})])}))]}
function row(dt,dd,cls){return el('div',{},[el('dt',{text:dt}),el('dd',{class:cls,text:dd})])}
function decision(v,problem){var facts=[];if(v.requester)facts.push(row('Requested by',v.requester,'requester'));if(v.requestedAt)facts.push(row('Requested',when(v.requestedAt)));
facts.push(row('Decide by',v.deadline?when(v.deadline):'no deadline','deadline'));facts.push(row('Request',v.id+' \\u00b7 '+v.key));
if(v.quorum){var by=v.quorum.votes.filter(function(x){return x.approves}).map(function(x){return x.you?'you':x.decider});facts.push(row('Approvals',v.quorum.approvals+' of '+v.quorum.required+' approvals'+(by.length?' ('+by.join(', ')+')':'')+' \\u00b7 '+v.quorum.needed+' more needed','quorum'))}
var d=v.delegated;if(d)facts.push(row('You decide',d.kind==='handover'?'for '+d.onBehalfOf+' (handed to you by '+(d.by||d.onBehalfOf)+(d.reason?': '+d.reason:'')+')':'for '+d.onBehalfOf+', who is away'+(d.reason?' ('+d.reason+')':''),'delegated'));
var h=v.handover;if(h)facts.push(row('Handed over','handed by '+h.by+' to '+h.to+(h.reason?' ('+h.reason+')':''),'handed'));
var out=[el('p',{class:'flow',text:v.flowTitle?v.flowTitle+' ('+v.flow+')':v.flow}),el('h1',{class:'message',text:v.message}),el('dl',{class:'facts'},facts)];
if(v.args&&Object.keys(v.args).length)out.push(el('section',{class:'args'},[el('h2',{text:'Details'}),el('dl',{},Object.keys(v.args).map(function(k){var x=v.args[k];return row(k,typeof x==='string'?x:JSON.stringify(x))}))]));
if(v.decided&&v.decided.length)out.push(el('section',{class:'made'},[el('h2',{text:'Already decided'}),el('dl',{},v.decided.map(function(d){return row(d.key,(d.you?'you':d.decider)+(d.onBehalfOf?' for '+d.onBehalfOf:'')+(d.decidedAt?' at '+when(d.decidedAt):''))}))]));
var form=el('form',{class:'answer',novalidate:true});var schema=v.requestedSchema||{properties:{}};var req=schema.required||[];var props=schema.properties||{};
if(problem)form.appendChild(el('p',{class:'problem',role:'alert',text:'Your answer was not accepted: '+problem.problem}));
Object.keys(props).forEach(function(name){form.appendChild(field(name,props[name],req.indexOf(name)>=0,problem))});
var act=el('div',{class:'actions'},[button('Submit decision','primary',function(){call('baton_decide',{id:v.id,key:v.key,answer:{action:'accept',content:read(form,props)}})}),
button('Decline to decide','secondary',function(){call('baton_decide',{id:v.id,key:v.key,answer:{action:'decline'}})})]);
form.appendChild(act);form.appendChild(el('p',{class:'hint',text:'Submitting records your answer once, under your name. Declining leaves the decision to someone else.'}));
form.addEventListener('submit',function(e){e.preventDefault()});out.push(form);
var to=el('input',{type:'text',name:'to',maxlength:256,autocomplete:'off'});var why=el('input',{type:'text',name:'reason',maxlength:500,autocomplete:'off'});
out.push(el('details',{class:'hand'},[el('summary',{text:'Hand to someone else\\u2026'}),el('label',{},['To ',to]),el('label',{},['Why ',why]),
button('Hand over','secondary',function(){var a={id:v.id,key:v.key,to:to.value.trim()};if(why.value.trim())a.reason=why.value.trim();call('baton_delegate',a)}),
el('p',{class:'hint',text:'They may then make it for you; you no longer may while it is with them.'})]));return out}
function choices(p){var s=p.type==='array'?(p.items||{}):p;if(Array.isArray(s.oneOf))return s.oneOf.filter(function(o){return typeof o['const']==='string'}).map(function(o){return {value:o['const'],label:o.title||o['const']}});
if(Array.isArray(s.anyOf))return s.anyOf.filter(function(o){return typeof o['const']==='string'}).map(function(o){return {value:o['const'],label:o.title||o['const']}});
if(Array.isArray(s['enum'])){var n=Array.isArray(s.enumNames)?s.enumNames:[];return s['enum'].map(function(x,i){return {value:String(x),label:typeof n[i]==='string'?n[i]:String(x)}})}return []}
function field(name,p,required,problem){var id='f-'+name;var label=p.title||name;var box=el('fieldset',{'data-field':name});
var issue=problem&&problem.issues?problem.issues.filter(function(i){return i.field===name})[0]:null;
var desc=p.description?el('span',{class:'desc',text:' '+p.description}):null;var c=choices(p);
if(p.type==='boolean'||c.length&&p.type!=='array'&&c.length<=4||p.type==='array'){box.appendChild(el('legend',{},[label+(required?' *':''),desc]));
var opts=p.type==='boolean'?[{value:'true',label:'Yes'},{value:'false',label:'No'}]:c;
opts.forEach(function(o){var i=el('input',{type:p.type==='array'?'checkbox':'radio',name:name,value:o.value,checked:p['default']!==undefined&&String(p['default'])===o.value});box.appendChild(el('label',{class:'choice'},[i,o.label]))})}
else{box.appendChild(el('label',{'for':id},[label+(required?' *':''),desc]));var input;
if(c.length){input=el('select',{id:id,name:name},[el('option',{value:'',text:''})].concat(c.map(function(o){return el('option',{value:o.value,text:o.label,selected:p['default']===o.value})})))}
else if(p.type==='string'&&(p.maxLength===undefined||p.maxLength>200)&&!p.format){input=el('textarea',{id:id,name:name,rows:3,maxlength:p.maxLength});if(p['default']!==undefined)input.value=String(p['default'])}
else{var t=p.type==='number'||p.type==='integer'?'number':({email:'email',uri:'url',date:'date','date-time':'datetime-local'})[p.format]||'text';
input=el('input',{id:id,name:name,type:t,min:p.minimum,max:p.maximum,step:p.type==='integer'?1:(t==='number'?'any':undefined),maxlength:p.maxLength,value:p['default']})}box.appendChild(input)}
if(issue)box.appendChild(el('p',{class:'problem',text:issue.hint}));return box}
function read(form,props){var out={};Object.keys(props).forEach(function(name){var p=props[name];var els=form.querySelectorAll('[name="'+name.replace(/["\\\\]/g,'\\\\$&')+'"]');
if(p.type==='array'){var v=[];els.forEach(function(e){if(e.checked)v.push(e.value)});out[name]=v;return}
var val;els.forEach(function(e){if(e.type==='radio'){if(e.checked)val=e.value}else val=e.value});if(val===undefined||val==='')return;
if(p.type==='boolean')out[name]=val==='true';else if(p.type==='number'||p.type==='integer'){var n=Number(val);out[name]=isNaN(n)?val:n}
else if(p.format==='date-time'&&/^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d$/.test(val))out[name]=val+':00Z';else out[name]=val});return out}
request('ui/initialize',{appInfo:{name:'baton-decision-app',version:'0.1.0'},appCapabilities:{},protocolVersion:'2026-01-26'}).then(function(){notify('ui/notifications/initialized',{});size()},function(){});
root.textContent='Loading\\u2026';})();`;
