//! The built-in word lists and patterns behind `GuardConfig::default()`.
//!
//! They aim at precision first: every rule needs either an unambiguous marker (a chat-template
//! token, "ignore previous instructions") or a combination (a send verb, a secret and an address;
//! a confirmation being removed and something at stake). A mention of a password, a transfer or a
//! deletion is never enough on its own.

use std::collections::BTreeMap;

use crate::pattern_rule::PatternRule;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(crate) fn fragments() -> BTreeMap<String, String> {
    map(&[
        // One character of the same English sentence (a dot inside "mail.example.com" does not end it).
        ("s", r"[^.!?;。！？；\n]|[.!?]\w"),
        // One character of the same Chinese sentence.
        ("zs", r"[^。！？；!?\n]"),
        (
            "confirm",
            r"\b(?:re-?)?confirm\w*|\bapprov\w*|\bverif\w*|\bauthori[sz]\w*|\bauthenticat\w*|\b2fa\b|\bmfa\b|\botp\b|\btwo[-\s]?(?:factor|step)(?:\s+(?:auth\w*|verification|login|checks?))?|\bdouble[-\s]?check\w*|\bsign[-\s]?offs?\b|\bconsent\b|\bpermission\b|\b(?:manual|human|security)\s+(?:review|check)s?\b|\b(?:second|double|extra|final)\s+checks?\b|\b(?:user['’]?s|my|their|his|her|owner['’]?s)\s+(?:ok|okay|go-ahead|say-so|green\s+light)\b",
        ),
        (
            "confirm_zh",
            r"二次确认|二次验证|双重确认|双重验证|两步验证|双因素(?:认证|验证)?|确认|验证(?:[^码]|$)|审批|批准|同意|核实|核对|授权|审核|认证|复核|校验|把关",
        ),
        (
            "secret",
            r"\bpass(?:words?|wds?|codes?|phrases?)\b|\bcredentials?\b|\blogins?\s+(?:details|info\w*|data)\b|\bapi[\s_-]?(?:keys?|tokens?|secrets?)\b|\b(?:secret|private|ssh|access|signing|encryption|license)\s+keys?\b|\b(?:access|auth|bearer|session|refresh|oauth|security|github|slack)\s+tokens?\b|\btokens?\b|\bsecrets\b|\b(?-i:PINs?)\b|\bpin\s+(?:codes?|numbers?)\b|\b(?:2fa|otp|one[-\s]time|verification|security|recovery|backup)\s+(?:codes?|passwords?|phrases?)\b|\bseed\s+phrases?\b|\bmnemonic\b|\b(?:credit|debit|bank)\s+cards?(?:\s+(?:numbers?|details|info\w*))?\b|\bcard\s+(?:numbers?|details)\b|\bcvv\b|\bcvc\b|\b(?:bank\s+)?account\s+(?:numbers?|details)\b|\brouting\s+numbers?\b|\bsocial\s+security\s+numbers?\b|\bssn\b|\bcookies?\b",
        ),
        (
            "secret_zh",
            r"密码|口令|密钥|私钥|秘钥|令牌|凭证|凭据|验证码|校验码|动态码|银行卡号?|卡号|信用卡(?:号|信息)?|身份证号?|助记词|(?-i:PIN)码?|api\s*key|token|cookie",
        ),
        (
            "send",
            r"\b(?:send|sends|sending|e-?mail|e-?mails|e-?mailing|mail|mails|mailing|forward|forwards|forwarding|upload|uploads|uploading|post|posts|posting|share|shares|sharing|leak|leaks|leaking|transmit|transmits|transmitting|relay|relays|relaying|paste|pastes|pasting|submit|submits|submitting|dump|dumps|dumping|export|exports|exporting|exfiltrate|exfiltrates|exfiltrating|text|texts|texting|dm|cc|bcc|deliver|delivers|delivering|reveal|reveals|revealing|disclose|discloses|disclosing)\b",
        ),
        (
            "send_zh",
            r"发送|发|转发|转交|传送|传|上传|提交|抄送|邮寄|寄|泄露|透露|告诉|告知|贴|粘贴|导出|分享|共享",
        ),
        (
            "destination",
            r#"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+|\b(?:https?|ftps?|sftp|wss?)://[^\s<>"'）)，。]+|\bwww\.[^\s<>"'）)，。]+|\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|co|me|xyz|ru|cn|info|biz|top|site|online|app|dev|cc|tk|ly|link|click|example)\b(?:/[^\s，。]*)?|\+\d[\d\s().-]{6,}\d|\b1[3-9]\d{9}\b|(?:^|\s)@[a-z0-9_]{3,}\b|\bwebhooks?\b|\bpastebin\b"#,
        ),
        // Phrases that turn a statement into a standing order. Everyday words such as "always",
        // "以后" or "自动" are left out: they are too common to raise suspicion on their own.
        (
            "directive",
            r"\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bfrom\s+(?:today|this\s+point)\s+on\b|\bhenceforth\b|\bhereafter\b|\bstarting\s+(?:now|today)\b|\bpermanent(?:ly)?\b|\bremember\s+(?:this|that)\b|\ball\s+future\b|\b(?:new|updated)\s+(?:rule|policy)\s*:|从现在起|从现在开始|从今以后|从今往后|永久|一律|记住|牢记|新规定|新规则",
        ),
        (
            "addressee",
            r"\byou\b|\byour\b|\bassistant\b|\bagent\b|\bthe\s+ai\b|\bbot\b|你|助手",
        ),
        // Something worth protecting must be involved before loosening a check is suspicious.
        ("stakes", r"{{directive}}|{{addressee}}|{{topics}}"),
        // Security controls whose removal helps misuse: second factors, identity and fraud checks,
        // approval steps, audit trails, encryption.
        (
            "control",
            r"\b(?:two|2|multi|second)[-\s]?(?:factor|step)(?:\s+(?:auth\w*|verification|login|sign[-\s]?ins?|checks?|codes?|prompts?))?|\b(?:2fa|mfa|otp|totp)\b(?:\s+(?:checks?|codes?|prompts?))?|\bsecond\s+factor\b|\bone[-\s]time\s+(?:codes?|pass(?:word|code)s?|pins?)\b|\b(?:identity|security|fraud|safety|compliance|sanctions|kyc|age|background|credit)\s+(?:checks?|verification|screening|reviews?)\b|\bverification(?:\s+(?:codes?|steps?|checks?|emails?|calls?|process))?\b|\b(?:approval|sign[-\s]?off|authori[sz]ation|confirmation)(?:\s+(?:steps?|process|flow|requirements?|checks?|prompts?|dialogs?|workflow))?\b|\b(?:audit|security|access)\s+(?:log(?:s|ging)?|trails?)\b|\bencryption\b|\bcaptchas?\b|\bfirewall\b|\b(?:login|sign[-\s]?in|password)\s+(?:checks?|protection|requirements?)\b",
        ),
        // Verbs and verb phrases that take a control away, placed before their object.
        (
            "disabling",
            r"\b(?:disable|disabling|deactivate|deactivating|switch(?:ing)?\s+off|turn(?:ing)?\s+off|shut(?:ting)?\s+(?:off|down)|kill|remove|removing|drop|dropping|skip|skipping|bypass|bypassing|circumvent(?:ing)?|suspend(?:ing)?|pause|pausing|waive|waiving|lift|lifting|relax|relaxing|loosen|loosening|weaken|weakening|get\s+rid\s+of|do\s+away\s+with|opt\s+out\s+of|ignore|ignoring|stop\s+(?:requiring|enforcing|checking|using|doing|sending|prompting(?:\s+(?:me|users?|anyone))?\s+for|asking(?:\s+(?:me|the\s+user|users?|anyone|them))?\s+for)|no\s+longer\s+(?:require|requiring|enforce|ask\s+for|use|check))\b",
        ),
        (
            "control_modifiers",
            r"(?:(?:the|a|an|any|all|every|each|my|our|your|their|user['’]?s?|usual|required|mandatory|extra|additional|sms|email|phone|app|login|sign[-\s]?in|account|admin|whole|entire|current)\s+){0,3}",
        ),
        // Words that make an order last: a scope over every case or over the future.
        (
            "standing_scope",
            r"\b(?:from\s+now\s+on|going\s+forward|from\s+(?:today|this\s+point|here|now)(?:\s+on(?:wards?)?)?|henceforth|hereafter|in\s+(?:the\s+)?future|permanently|for\s+good|forever|by\s+default|any\s*more|any\s+longer|no\s+longer|every|each|all|always|whenever|any\s+time)\b",
        ),
        // Acts a check stands in front of, as orders give them.
        (
            "unchecked_act",
            r"approve|accept|authori[sz]e|grant|pay|refund|release|process|transfer|wire|ship|send|sign\s+off|execute|merge|deploy|unlock|reset|issue|confirm",
        ),
        // The checks such an order drops.
        (
            "checking",
            r"\bcheck\w*|\bverif\w*|\bconfirm\w*|\breview\w*|\bapprov\w*|\bvalidat\w*|\blook\w*\s+(?:at|into)|\bask\w*|\bconsult\w*|\bauthenticat\w*|\bdouble[-\s]?check\w*|(?:{{control}})",
        ),
        (
            "control_zh",
            r"双重验证|双重认证|双因素(?:认证|验证)?|两步验证|二次验证|二次确认|多因素(?:认证|验证)|多重验证|短信验证码?|验证码|身份(?:验证|核验|认证|核实|校验)|人脸识别|安全(?:验证|检查|校验)|风控|审批(?:流程|环节|步骤)?|审核(?:流程|环节|步骤)|审计日志|操作日志|日志记录|加密|防火墙|登录保护|(?:确认|验证|核对|复核)(?:环节|步骤|流程)",
        ),
        (
            "standing_scope_zh",
            r"以后|今后|往后|此后|从现在起|从现在开始|从今(?:天|日|往后)?(?:起|开始|以后)|所有|全部|一律|每次|每一次|永久|永远|一直|默认|都",
        ),
        // An agent told it is someone else, or asked to play a part.
        (
            "persona",
            r"\byou\s+are\s+now\b|\byou['’]re\s+now\b|\byou\s+(?:will|shall|must)\s+(?:now\s+)?(?:be|become|act|respond|answer|play)\b|\byou['’]ll\s+(?:now\s+)?(?:be|become|act|respond|answer|play)\b|\b(?:act|acting|respond|answer|reply|behave|speak)\s+as\b|\bpretend(?:ing)?\s+(?:to\s+be|you\s+are|you['’]re|that\s+you)\b|\brole-?play\w*(?:\s+as)?\b|\bplay\s+the\s+(?:role|part)\s+of\b|\bstay\s+in\s+character\b|\b(?:enable|enter|activate|switch\s+(?:in)?to|turn\s+on|unlock)\s+(?:the\s+)?(?:[\w-]+\s+){0,2}mode\b|\bin\s+(?:[\w-]+\s+){0,2}mode\s*,?\s+you\b",
        ),
        // Being free of the rules an agent works under.
        (
            "unbound",
            r"\b(?:without|no|zero|free\s+(?:of|from)|not\s+(?:bound|limited|restricted)\s+by|unbound\s+by|ignor\w*|disregard\w*|bypass\w*|never\s+(?:follow|obey|respect)\w*)\s+(?:(?:any|all|every|the|your|its|his|her|their|of|usual|normal|ethical|moral|content|safety)\s+){0,3}(?:restrictions?|rules?|limits?|limitations?|filters?|guidelines?|guardrails?|safeguards?|safety|polic(?:y|ies)|censorship|ethics|morals?|constraints?|boundaries)\b|\b(?:safety|filters?|guardrails?|restrictions?|rules|limits|content\s+polic(?:y|ies)|safeguards?|guidelines)\s+(?:(?:are|is|have\s+been|has\s+been|were|was|got)\s+)?(?:now\s+)?(?:disabled|off|removed|lifted|turned\s+off|switched\s+off|suspended|gone|void|do\s+not\s+apply|don['’]?t\s+apply|no\s+longer\s+apply)\b|\b(?:unrestricted|unfiltered|uncensored|jailbr(?:oken|eak))\b|\bcan\s+do\s+anything\b|\banything\s+goes\b",
        ),
        (
            "unbound_zh",
            r"不受(?:任何)?[^。！？\n]{0,8}?(?:限制|约束)|没有(?:任何)?[^。！？\n]{0,6}?(?:限制|约束|规则|底线)|无视(?:所有|一切|任何)?[^。！？\n]{0,6}?(?:规则|限制|安全|规定|政策)|不(?:用|必|再)?遵守[^。！？\n]{0,6}?(?:规则|限制|规定|政策)|无限制|毫无限制|无所不能",
        ),
        (
            "negator_en",
            r"\b(?:never|not|don['’]?t|do\s+not|doesn['’]?t|does\s+not|must\s+not|mustn['’]?t|should\s+not|shouldn['’]?t|cannot|can['’]?t|won['’]?t|no\s+one|nobody)\b",
        ),
        (
            "negator_zh",
            r"不要|不能|不得|不可|不该|不应|别|禁止|切勿|严禁|绝不|决不|不准|不许|请勿|从不",
        ),
        // The modal words of a standing rule and of leave against it (`rule_relaxing.rs`). They
        // name no topic: a permission counts only against a close rule of the principal.
        (
            "permission",
            r"\bno\s+need\s+(?:to|for)\b|\bneedn['’]?t\b|\b(?:don['’]?t|doesn['’]?t|do\s+not|does\s+not|won['’]?t|will\s+not)\s+(?:need|have)\s+to\b|\b(?:is|are)\s+(?:not|no\s+longer)\s+(?:required|needed|necessary|mandatory)\b|\bnot\s+required\b|\bno\s+longer\s+(?:needs?|requires?|required|needed|necessary|mandatory|applies|apply|valid|in\s+force|enforced)\b|\boptional\b|\b(?:skip|skipping|bypass|bypassing|waive|waived|waiving)\b|\bexempt(?:ed)?\b|\bwithout\s+(?:waiting|checking|asking|approval|confirmation|review|reviewing|verification|verifying|sign-?off|a\s+call|calling|any)\b|\b(?:can|may)\s+(?:just|simply|directly|freely|now|always|go\s+ahead)\b|\bgo\s+ahead\s+and\b|\bstraight\s+(?:away|through|to)\b|\bdirectly\b|\bfree\s+to\b|\bpre-?approved\b|\bpre-?authori[sz]ed\b|\b(?:has|have)\s+(?:now\s+|already\s+)?(?:approved|authori[sz]ed|agreed|okayed|cleared|signed\s+off)\b|\bauthori[sz]es\b|\b(?:you['’]re|you\s+are|is|are)\s+(?:now\s+|hereby\s+|fully\s+)?(?:authori[sz]ed|cleared|allowed|permitted|free)\b|\b(?:it['’]s|it\s+is|that['’]s|is|are)\s+(?:totally\s+|perfectly\s+|completely\s+|now\s+)?(?:fine|ok|okay|acceptable|allowed)\s+(?:to|for)\b|\boverrides?\b|\bsupersedes?\b|\b(?:is|are)\s+(?:now\s+)?(?:outdated|obsolete|void|lifted|suspended|waived|relaxed)\b|\bany\s+time\b|\b(?:everyone|everybody|anyone|anybody)\s+(?:can|may)\b",
        ),
        (
            "permission_zh",
            r"过时|作废|废止|失效|不再(?:需要|要求|必须|用|适用|执行)|已取消|取消了|同意了|批准了|授权|已同意|不用|无需|无须|不需要|不必|用不着|没必要|免去|免除|豁免|跳过|绕过|直接|自行|随时|任意|任何人都|都可以|可以|允许|放开|省去|省掉",
        ),
        (
            "permission_negated",
            r"\b(?:not|never|no|don['’]?t|doesn['’]?t|do\s+not|does\s+not|mustn['’]?t|must\s+not|can['’]?t|cannot|shouldn['’]?t|should\s+not|won['’]?t|isn['’]?t|aren['’]?t|nobody|no\s+one)(?:\s+[\w'’-]+){0,2}\s*|(?:不|别|禁止|严禁|勿|没有|未经|未)\p{Han}{0,3}",
        ),
        (
            "obligation",
            r"\b(?:must|mustn['’]?t|never|only|requires?|required|requiring|has\s+to|have\s+to|needs?\s+to|mandatory|forbidden|prohibited|may\s+not|can['’]?t|cannot|shouldn['’]?t|should\s+not|do\s+not|don['’]?t)\b|\bneeds?\s+(?:[\w'’-]+\s+){0,2}(?:approval|sign-?off|confirmation|review|verification|consent|permission|a\s+call)\b|\b(?:is|are)\s+subject\s+to\b|\bnot\s+(?:allowed|permitted)\b|\bno\s+exceptions?\b|\bunder\s+no\s+circumstances\b|\balways\s+(?:ask|check|confirm|get|wait|run|call)\b",
        ),
        (
            "obligation_zh",
            r"必须|务必|一定要|一定得|不能|不可以|不可|不许|不准|不允许|不得|禁止|严禁|只能|只许|只有\p{Han}{1,12}才|要先|须|(?:^|[^特区分级类告识个性差鉴])别[^人的处]|不要|绝不|绝对不|决不|都要|一律要|得先|才能|才可以",
        ),
        (
            "relayed",
            r"\b(?:fwd?|fw)\s*:|\b(?:forwarded|pasted|copied|copy-?pasted|reposted|cross-?posted|quoted|taken)\s+(?:here\s+)?from\b|\b(?:forwarding|pasting|quoting|sharing)\s+(?:this|these|the\s+following|what|below)\b|\b(?:from|in)\s+(?:an?|the|this|that|some)\s+(?:e-?mail|message|post|blog|article|thread|page|site|website|chat|group|forum|newsletter|document|doc|pdf|tweet|comment|review|memo|text|dm)\s+(?:I|we)\s+(?:got|received|was\s+sent|read|saw|found)\b|\b(?:wrote|says|said|writes)\s*:",
        ),
        (
            "relayed_zh",
            r"转发|转自|转载|摘自|引自|复制自|粘贴自|抄自|原文如下|原话(?:是|如下)?[:：]|网传",
        ),
    ])
}

pub(crate) fn negation() -> String {
    r"(?:{{negator_en}}(?:[\s,]+[\w'’-]+){0,2}[\s,]*|(?:{{negator_zh}})\p{Han}{0,3})$".to_string()
}

pub(crate) fn injection() -> Vec<PatternRule> {
    vec![
        PatternRule::new(
            "ignore_previous_instructions",
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|its|their|our|my|of|these|those|every|whatever)\s+){0,3}(?:previous|prior|earlier|above|preceding|former|original|existing|initial|old|past|system)\s+(?:[\w-]+\s+)?(?:instructions?|directives?|prompts?|programming)\b",
        ),
        // "Rules", "guidance" and the like are also ordinary office words ("disregard the previous
        // guidance from HR"), so they count only when something is at stake.
        PatternRule::new(
            "ignore_previous_rules",
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|its|their|our|my|of|these|those|every|whatever)\s+){0,3}(?:previous|prior|earlier|above|preceding|former|original|existing|initial|old|past|system)\s+(?:[\w-]+\s+)?(?:rules?|guidelines?|guidance|commands?|constraints?|polic(?:y|ies)|restrictions?|safeguards?)\b",
        )
        .with_context("{{stakes}}"),
        PatternRule::new(
            "ignore_the_instructions_above",
            r"\b(?:ignore|disregard|forget)\s+(?:all\s+)?(?:the|any|these|those|your)\s+(?:[\w-]+\s+)?(?:instructions|rules|guidelines|directives|prompts?)\s+(?:above|before\s+this|given\s+(?:earlier|before|previously)|you\s+(?:were|have\s+been)\s+given)\b",
        ),
        PatternRule::new(
            "ignore_your_rules",
            r"\b(?:ignore|disregard|override|bypass)\s+(?:all\s+|any\s+)?(?:of\s+)?your\s+(?:[\w-]+\s+)?(?:instructions|rules|guidelines|programming|training|polic(?:y|ies)|restrictions|constraints|safety|guardrails|system\s+prompt|directives?)\b",
        ),
        PatternRule::new(
            "ignore_everything_above",
            r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all(?:\s+of\s+that)?)\s+(?:(?:you\s+(?:were|have\s+been)\s+told|(?:that\s+)?(?:was|is)\s+(?:said|written))\s+)?(?:above|before|previously|earlier|so\s+far|until\s+now)\b",
        ),
        PatternRule::new(
            "ignore_previous_instructions_zh",
            r"(?:忽略|无视|忽视|不要理会|不用理会|不必理会|抛开|丢弃|抛弃)(?:掉)?(?:你)?(?:之前|以前|先前|此前|上面|上述|以上|前面|原来|原有|原先|已有|既有|其他|其它|所有|全部|一切|系统)[^。！？\n]{0,8}?(?:指令|指示|命令|提示词|设定)|(?:忘记|忘掉|忘了)(?:之前|以前|先前|此前|上面|上述|以上|前面)的?(?:所有|全部|一切)?的?(?:指令|指示|提示词)",
        ),
        PatternRule::new(
            "ignore_previous_rules_zh",
            r"(?:忽略|无视|忽视|不要理会|不用理会|不必理会|抛开|丢弃|抛弃)(?:掉)?(?:你)?(?:之前|以前|先前|此前|上面|上述|以上|前面|原来|原有|原先|已有|既有|其他|其它|所有|全部|一切|系统)[^。！？\n]{0,8}?(?:规则|约束|限制|要求|规定|安全)",
        )
        .with_context("{{stakes}}"),
        PatternRule::new(
            "system_marker",
            r"(?:^|[\n.!?。！？:：;>)\]】」\x22'*#\[【「(]\s*)(?-i:SYSTEM)(?:[ _-](?-i:[A-Z]+)){0,2}\s*(?:[:：\]】」]|-{1,2}>)",
        ),
        PatternRule::new(
            "system_note",
            r"\bsystem\s+(?:note|override|instructions?|directive|prompt|command)s?\s*[:：]|<\s*/?\s*system\s*>",
        ),
        PatternRule::new(
            "system_prompt_tampering",
            r"\b(?:ignore|disregard|override|reveal|leak|bypass|print|dump)\s+(?:the\s+|your\s+|its\s+)?(?:[\w-]+\s+)?system\s+prompt\b|\byour\s+system\s+prompt\b",
        ),
        PatternRule::new(
            "system_marker_zh",
            r"(?:【|\[|「)?系统(?:提示词?|消息|指令)\s*(?:[:：]|】|\]|」)",
        ),
        PatternRule::new(
            "role_reassignment",
            r"\byou\s+are\s+(?:now|no\s+longer)\s+(?:(?:a|an|the|my)\s+(?:[\w-]+\s+){0,3}?(?:assistant|ai|agent|bot|chatbot|model|llm|persona|character)\b|in\s+(?:developer|god|admin|jailbreak|jailbroken|unrestricted|dan|sudo|root)\s+mode\b|(?:dan|unrestricted|unfiltered|jailbroken|uncensored)\b|free\s+(?:from|of)\s+(?:all\s+|any\s+|your\s+)*(?:rules|restrictions|constraints|guidelines|limits)\b|(?:bound|restricted|limited)\s+by\b)|\bpretend\s+(?:that\s+)?you\s+(?:are|have)\s+no\s+(?:rules|restrictions|limits|guidelines)\b|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|unfiltered|jailbroken|uncensored)\b",
        ),
        PatternRule::new(
            "role_reassignment_zh",
            r"(?:你现在|从现在起你|从现在开始你|现在起你)(?:是|就是|扮演|作为|变成|成为)[^。！？\n]{0,15}?(?:助手|AI|人工智能|机器人|模型|角色|没有(?:任何)?限制|不受(?:任何)?限制)|(?:你|助手)(?:现在)?(?:不再|不用再?|不必再?)(?:受|遵守|遵循|理会)[^。！？\n]{0,10}?(?:限制|规则|约束|指令|政策)",
        ),
        PatternRule::new(
            "from_now_on_without_confirmation",
            r"(?:\bfrom\s+now\s+on|\bgoing\s+forward|\bfrom\s+(?:today|this\s+point)(?:\s+on(?:wards?)?)?|\bin\s+(?:the\s+)?future|\bhenceforth|\bhereafter|\bstarting\s+(?:now|today))\b(?:{{s}}){0,100}?\bwithout\s+(?:(?:first\s+)?(?:asking|requesting|requiring|needing|waiting|getting|seeking|checking)\s+(?:with\s+|for\s+)?)?(?:[\w'’-]+\s+){0,3}?(?:{{confirm}})",
        )
        .with_context(r"{{addressee}}|{{topics}}")
        .with_unless(r"{{negator_en}}"),
        PatternRule::new(
            "from_now_on_no_asking",
            r"(?:\bfrom\s+now\s+on|\bgoing\s+forward|\bfrom\s+(?:today|this\s+point)(?:\s+on(?:wards?)?)?|\bin\s+(?:the\s+)?future|\bhenceforth|\bhereafter|\bstarting\s+(?:now|today))\b(?:{{s}}){0,100}?(?:\b(?:never|don['’]?t|do\s+not|no\s+need\s+to|stop)\s+(?:bother(?:ing)?\s+(?:to\s+)?)?(?:ask|request|seek|wait|check)\w*\s+(?:(?:with|for|me|the|user|users|owner|them|anyone|a|an|any|my|their|explicit|second|further|additional|prior|to)\s+){0,4}(?:{{confirm}})|\bno\s+(?:more\s+|further\s+|second\s+)?(?:{{confirm}})\s+(?:is\s+|are\s+)?(?:needed|required|necessary))",
        )
        .with_context(r"{{addressee}}|{{topics}}"),
        PatternRule::new(
            "from_now_on_no_confirmation_zh",
            r"(?:从现在起|从现在开始|从今(?:天|日|往后)?(?:起|开始|以后)|今后|以后|往后|此后|将来|永久|永远)(?:{{zs}}){0,40}?(?:不需要|不需|无需|无须|不用|不必|免去|免除|免|跳过|省去|省略|不再|(?:不要|别)再?(?:问|询问|请求|征求|等待|要求))(?:{{zs}}){0,12}?(?:{{confirm_zh}}|问我|询问|请示|过问)",
        )
        .with_context(r"{{addressee}}|{{topics}}")
        .with_unless(r"(?:{{negator_zh}})再?(?:跳过|省略|省去|取消|绕过|关闭|免去)"),
        PatternRule::new(
            "concealment",
            r"\b(?:do\s+not|don['’]?t|never)\s+(?:tell|inform|notify|alert|warn|let)\s+(?:the\s+)?user\b|\b(?:do\s+not|don['’]?t|never)\s+mention\s+(?:this|it|that)\s+to\s+(?:the\s+)?user\b|\bwithout\s+(?:telling|informing|notifying|alerting|warning)\s+(?:the\s+)?user\b|\b(?:hide|keep)\s+(?:this|it|that)\s+(?:secret\s+|hidden\s+)?from\s+(?:the\s+)?user\b|\bsilently\s+(?:send|forward|transfer|delete|approve|execute|run|email|upload|grant)\b",
        ),
        PatternRule::new(
            "concealment_zh",
            r"(?:不要|别|无需|不用|不必)(?:告诉|通知|提醒|告知|让)用户|瞒着用户|不让用户(?:知道|发现)|悄悄(?:地)?(?:发送|发|转发|转账|删除|上传|执行|授权)",
        ),
        PatternRule::new(
            "obey_only",
            r"\b(?:only|always)\s+obey\b|\bobey\s+(?:only|all|every|any)\b|只(?:听从|服从|执行)(?:我|这条|以下)",
        ),
        PatternRule::new(
            "hidden_comment",
            r"<!--(?:[^-]|-[^-]){0,400}?(?:\bassistant|\bagent|\bai\b|\bllm|\bmodel|\bsystem|\binstruction|\bignore|\bdisregard|\balways\b|\bnever\b|\bmust\b|\bfrom\s+now\s+on|\bremember|\bsend|\bemail|\bforward|\bpassword|\bprompt|指令|助手|系统|忽略|发送|记住|密码)[\s\S]{0,400}?-->",
        ),
        PatternRule::new(
            "script_markup",
            r#"<\s*script\b[^>]*>[\s\S]*?<\s*/\s*script\s*>|<\s*script\b[^>]*\bsrc\s*=|\bhref\s*=\s*["']?\s*javascript:|<[^>]+\son(?:load|error|click|mouseover|focus)\s*=|<\s*iframe\b"#,
        ),
        PatternRule::new(
            "hidden_styled_text",
            r#"\bstyle\s*=\s*["'][^"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?:px|pt|em|rem)?\s*(?:[;"']|$)|opacity\s*:\s*0(?:\.0+)?\s*(?:[;"']|$))"#,
        ),
        PatternRule::new(
            "chat_template_token",
            r"\[/?INST\]|<<\s*/?\s*SYS\s*>>|<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|>",
        ),
        // Tag characters spell hidden ASCII; zero-width characters inside a Latin word or in a long
        // run hide or encode text; bidi overrides reorder what is displayed. Emoji joiners, bidi
        // marks in right-to-left text and soft hyphens from copied web text stay allowed.
        PatternRule::new(
            "invisible_characters",
            r"[\x{E0000}-\x{E007F}]|[a-z][\x{200B}-\x{200D}\x{2060}-\x{2064}\x{FEFF}\x{180E}]+[a-z]|[\x{200B}-\x{200F}\x{202A}-\x{202E}\x{2060}-\x{2064}\x{2066}-\x{2069}\x{FEFF}\x{180E}]{4,}|[\x{202D}\x{202E}]",
        ),
        // Someone else's words that speak to the agent: a greeting or a vocative at the head of a
        // clause ("hi assistant", "Assistant, …", "[ADMIN] Bot: …"), words meant for AI
        // assistants ("note to any AI assistant", "guidance for AI agents: …"). A message for the
        // principal has no reason to address their assistant; one that does is steering it.
        PatternRule::new(
            "addressed_to_ai",
            r"\b(?:note|message|instructions?|attention|important|notice)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llm|language\s+model|assistant|agent|chatbot|bot)s?\b|\b(?:if\s+you\s+are\s+an?|dear|hey)\s+(?:ai|llm|language\s+model|assistant|agent|chatbot)\b|\b(?:ai|llm|assistants?|agents?|models?)\s+(?:reading|processing|summari[sz]ing|parsing|browsing|visiting)\s+(?:this|the)\b|(?:致|给)(?:AI|人工智能)?(?:助手|智能体|大模型)|如果你是(?:AI|人工智能|一个?(?:AI|语言模型|助手|智能体))|(?:AI|人工智能)助手(?:请|必须|应该|需要)|\b(?:hi|hey|hello|dear|attention|attn|yo)\s*,?\s+(?:(?:the|my|our|your|dear)\s+)?(?:ai\s+|virtual\s+|digital\s+)?(?:assistants?|agents?|bots?|helpers?)\b|(?:^|[.!?:;\]\)—–-]\s*)(?:(?:the|dear|an?)\s+)?(?:ai\s+)?(?:assistants?|agents?|bots?)\s*[,:!—–]|\b(?:ai|llm|automated|virtual)(?:[\s-]+[a-z]+)?\s+(?:assistants|agents|assistant|agent|bots?|models?)\b(?:{{s}}){0,120}?(?:\b(?:please|must|should|shall|need\s+to|have\s+to|are\s+to|is\s+to|always|never|automatically|do\s+not|don['’]t|make\s+sure|are\s+(?:now\s+)?(?:authori[sz]ed|allowed|permitted|expected|instructed|cleared))\b|[:：—–])|(?:致|各位|所有|亲爱的|贵司|贵方)\s*(?:的)?\s*(?:AI|人工智能)?\s*(?:\p{Han}{0,2}?)(?:助手|助理|机器人|智能体)|(?:AI|人工智能)\s*(?:\p{Han}{0,2}?)(?:助手|助理|机器人|智能体)(?:{{zs}}){0,30}?(?:请|必须|务必|可以|可|应当|应该|需要|记住|记下|记一下|执行|照做|按照|按新|不用|无需|无须|直接|一律|今后|以后|后续)|(?:^|[。！？；：:\]】)）]\s*)(?:AI|人工智能|智能)?\s*(?:助手|助理|机器人|智能体)\s*[，,：:！!—]",
        )
        .untrusted_only(),
        // A persona set up to be free of the agent's rules, in one sentence or the next.
        PatternRule::new(
            "persona_without_limits",
            r"(?:{{persona}})(?:{{s}}){0,120}?(?:{{unbound}})|(?:{{persona}})(?:{{s}}){0,80}?[.!?;:]\s+(?:{{s}}){0,60}?(?:\byou\b|\bmode\b|\bai\b|\bmodel\b|\bbot\b|\bassistant\b|\bwho\b)(?:{{s}}){0,60}?(?:{{unbound}})",
        ),
        PatternRule::new(
            "persona_without_limits_zh",
            r"(?:你现在|从现在起你|现在起你|扮演|假装|充当|角色扮演|(?:进入|开启|启用|切换到|打开)[^。！？\n]{0,8}?模式)(?:{{zs}}){0,40}?(?:{{unbound_zh}})",
        ),
        PatternRule::new(
            "disable_own_safety",
            r"(?:{{disabling}})\s+(?:(?:your|its|the\s+(?:ai|model|assistant)['’]?s?)\s+(?:[\w-]+\s+)?(?:filters?|restrictions?|guardrails?|safeguards?|rules|limits|safety|polic(?:y|ies)|ethics)|(?:the\s+|all\s+|any\s+)?(?:safety|content|nsfw|moderation|ethic\w*)\s+(?:filters?|checks?|rules|settings?|guardrails?|layers?|polic(?:y|ies)|restrictions?)|(?:the\s+|all\s+|any\s+)?(?:guardrails|safeguards|censorship|moderation))\b|\b(?:your|its)\s+(?:[\w-]+\s+)?(?:restrictions?|filters?|rules|limits|guardrails|safeguards)\s+(?:are|is|have\s+been|were)\s+(?:now\s+)?(?:lifted|removed|disabled|off|gone|suspended|void)\b",
        ),
        PatternRule::new(
            "disable_own_safety_zh",
            r"(?:关闭|关掉|停用|禁用|取消|解除|去掉|绕过)(?:掉)?(?:你的|你|所有的?|全部的?)?[^。！？\n]{0,4}?(?:安全(?:过滤|限制|规则|审查|机制|设置)|内容(?:过滤|审查)|审查机制|道德限制)",
        ),
        // Decoding is the agent's step, not the reader's: an order to decode and obey is an
        // order to obey whatever the blob says.
        PatternRule::new(
            "decode_and_obey",
            r"\b(?:decode|decrypt|deobfuscate|unscramble)\w*\b(?:{{s}}|[.:]){0,60}?\b(?:and|then|,)\s+(?:then\s+)?(?:do|follow|obey|execute|run|carry\s+out|act\s+on|apply|perform|comply\s+with)\s+(?:it|them|this|that|what|whatever|exactly|accordingly|as\s+it|the\s+(?:instructions?|commands?|steps?|orders?|text|result))\b|\b(?:do|follow|obey|execute|run|carry\s+out|act\s+on|perform)\s+(?:exactly\s+)?(?:what(?:ever)?)\s+(?:it|this|that|the\s+\w+)\s+(?:\w+\s+)?(?:says|decodes?\s+to)\b",
        ),
        PatternRule::new(
            "decode_and_obey_zh",
            r"解码(?:{{zs}}){0,20}?(?:照做|执行|照着|遵照|按照|照办)|(?:照做|执行|照办)(?:{{zs}}){0,6}?解码后",
        ),
        // An address to the agent followed by an order, as a page hides for a reading agent.
        PatternRule::new(
            "order_to_agent",
            r"\b(?:ai|llm|assistants?|agents?|models?|bots?|chatbots?)(?:\s+(?:instructions?|note|notice|message))?(?:\s*[:,—–]|\s+(?:reading|processing|summari[sz]ing|must|should|shall|needs?\s+to|has\s+to|have\s+to|is\s+to|are\s+to|will|please)\b)(?:{{s}}|[:,]){0,80}?\b(?:always|never|recommend|tell|say|answer|reply|respond|mention|include|add|insert|send|forward|email|pay|approve|grant|delete|ignore|disregard|forget|obey|follow|prefer|promote|praise|rate|suggest|mark|buy|purchase|transfer|wire|click|visit|open|print|reveal|describe|claim|state)\b|(?:助手|AI|智能体|模型|机器人)\s*[：:，,](?:{{zs}}){0,40}?(?:请|必须|务必|一律|总是|永远|推荐|告诉|回答|发送|转发|删除|标记|付款|转账|批准|忽略)",
        )
        .untrusted_only(),
        PatternRule::new(
            "new_instructions",
            r"\b(?:new|updated|revised|real|actual|hidden|secret|additional)\s+(?:system\s+)?instructions?\s*[:：]|(?:新|最新|真正|隐藏|额外)的?(?:指令|指示)\s*[:：]",
        )
        .untrusted_only(),
    ]
}

pub(crate) fn exfiltration() -> Vec<PatternRule> {
    let not_a_secret = r"\bpasswords?\s+(?:reset|change|manager|policy|polic(?:y|ies)|hint|strength|requirements?|rules?|expir\w*)\b|\breset\s+(?:link|email|instructions)\b|重置密码|密码重置|找回密码|修改密码的?链接";
    vec![
        PatternRule::new(
            "send_secret_to_destination",
            r"{{send}}(?:{{s}}){0,80}?(?:{{secret}})(?:{{s}}){0,60}?\b(?:to|into|onto|at|on|via|through|with)\b(?:{{s}}){0,30}?(?:{{destination}})",
        )
        .with_unless(not_a_secret),
        PatternRule::new(
            "send_to_destination_the_secret",
            r"{{send}}\s+(?:(?:it|them|everything|this|that)\s+)?(?:(?:to|at)\s+)?(?:{{destination}})(?:{{s}}){0,80}?(?:{{secret}})",
        )
        .with_unless(not_a_secret),
        PatternRule::new(
            "secret_in_url",
            r"(?:https?://|www\.)[^\s]*[?&][a-z0-9_]*(?:pass|pwd?|token|secret|key|cred|session|cookie|card|otp)[a-z0-9_]*=(?:\{|\$\{?|<|%7b|\[)",
        ),
        PatternRule::new(
            "send_secret_to_destination_zh",
            r"(?:把|将)(?:{{zs}}){0,30}?(?:{{secret_zh}}|{{secret}})(?:{{zs}}){0,30}?(?:{{send_zh}})(?:到|给|至|往)?(?:[^了。！？；!?\n](?:{{zs}}){0,39}?)?(?:{{destination}})",
        )
        .with_unless(not_a_secret),
        PatternRule::new(
            "send_to_destination_the_secret_zh",
            r"(?:{{send_zh}})(?:{{zs}}){0,20}?(?:{{secret_zh}}|{{secret}})(?:{{zs}}){0,30}?(?:到|给|至|往)(?:[^了。！？；!?\n](?:{{zs}}){0,19}?)?(?:{{destination}})|(?:{{send_zh}})(?:到|给|至|往)\s*(?:{{destination}})(?:{{zs}}){0,30}?(?:{{secret_zh}}|{{secret}})",
        )
        .with_unless(not_a_secret),
    ]
}

pub(crate) fn policy_weakening() -> Vec<PatternRule> {
    let stakes = "{{stakes}}";
    vec![
        PatternRule::new(
            "no_longer_requires_confirmation",
            r"\b(?:no\s+longer|not\s+anymore|no\s+more|never\s+again|not\s+any\s+longer)\s+(?:[\w-]+\s+){0,2}?(?:needs?|requires?|needed|required|necessary|mandatory|has\s+to|have\s+to|must)\b(?:{{s}}){0,40}?(?:{{confirm}})|(?:{{confirm}})(?:{{s}}){0,30}?\b(?:is|are)\s+no\s+longer\s+(?:required|needed|necessary|mandatory)\b",
        )
        .with_context(stakes),
        PatternRule::new(
            "confirmation_not_needed",
            r"\b(?:don['’]?t|doesn['’]?t|do\s+not|does\s+not|won['’]?t|will\s+not|shouldn['’]?t|should\s+not)\s+(?:need|require|have\s+to\s+(?:get|have|go\s+through|ask\s+for|wait\s+for)|need\s+to\s+(?:get|have|go\s+through|ask\s+for|wait\s+for))\b(?:{{s}}){0,30}?(?:{{confirm}})|(?:{{confirm}})\s+(?:is|are)\s+(?:not|never)\s+(?:required|needed|necessary|mandatory)\b|\bno\s+(?:second\s+|extra\s+|further\s+|additional\s+)?(?:{{confirm}})\s+(?:is\s+|are\s+)?(?:required|needed|necessary)\b|\b(?:needs?|requires?)\s+(?:(?:a|any|the)\s+)?(?:{{confirm}})\s+any\s*(?:more|longer)\b",
        )
        .with_context(stakes),
        PatternRule::new(
            "skip_confirmation",
            r"\b(?:skip|skipping|bypass|bypassing|circumvent|circumventing|waive|waives|waived|waiving|omit|omitting|forgo|forgoing)\s+(?:(?:the|any|all|a|my|your|their|user['’]?s?|second|extra|additional|further|usual|required|mandatory|two[-\s]step|two[-\s]factor|double|manual|human|security|safety|final)\s+){0,3}(?:{{confirm}})",
        )
        .with_context(stakes),
        // Two-factor and identity checks exist only to stop misuse; skipping them needs no context.
        PatternRule::new(
            "skip_security_check",
            r"\b(?:skip|skipping|bypass|bypassing|circumvent|circumventing|get\s+around|work\s+around)\s+(?:(?:the|any|all|a|my|your|their|user['’]?s?|usual|required|mandatory|sms|email|phone)\s+){0,3}(?:2fa|mfa|otp|two[-\s]?(?:factor|step)(?:\s+(?:auth\w*|verification|login|checks?|codes?))?|identity\s+(?:verification|checks?)|security\s+(?:checks?|questions?)|fraud\s+checks?)\b|(?:跳过|绕过|绕开|略过|免去|关闭|关掉|停用|禁用)(?:掉)?[^。！？；!?\n需要必得了]{0,6}?(?:两步验证|双重验证|双因素|二次验证|身份验证|身份核验|人脸识别|短信验证|安全验证|风控)",
        ),
        PatternRule::new(
            "do_not_ask_for_confirmation",
            r"\b(?:don['’]?t|do\s+not|never|no\s+need\s+to|stop|quit|there['’]?s\s+no\s+need\s+to)\s+(?:bother(?:ing)?\s+(?:to\s+)?)?(?:ask|asking|request|requesting|seek|seeking|wait|waiting|check|checking|get|getting)\s+(?:(?:with|for|me|the|user|users|owner|them|him|her|anyone|a|an|any|my|their|his|explicit|second|further|additional|prior|to)\s+){0,4}(?:{{confirm}})|\bno\s+need\s+to\s+(?:ask|check\s+with|consult|confirm\s+with)\s+the\s+user\b",
        )
        .with_context(stakes),
        PatternRule::new(
            "disable_verification",
            r"\b(?:disable|disabling|turn\s+off|turning\s+off|switch\s+off|deactivate|deactivating|remove|removing|drop|dropping)\s+(?:(?:the|all|any|a|my|your|their|user['’]?s?|second|extra|additional|two[-\s]step|two[-\s]factor|double|manual|security|safety)\s+){0,3}(?:{{confirm}})",
        )
        // "The user's" is how text aimed at the agent names its principal.
        .with_context(r"{{directive}}|{{addressee}}|\bthe\s+user\b|\bthe\s+user['’]s\b"),
        PatternRule::new(
            "act_without_confirmation",
            r"\b(?:always|automatically|go\s+ahead\s+and|feel\s+free\s+to|(?:you|agents?|the\s+assistant)\s+(?:can|may|should|must|are\s+allowed\s+to))\b(?:{{s}}){0,60}?\bwithout\s+(?:(?:(?:first\s+)?(?:asking|requesting|requiring|needing|waiting|getting|seeking|checking)\s+(?:with\s+|for\s+)?)?(?:[\w'’-]+\s+){0,3}?(?:{{confirm}})|(?:first\s+)?(?:asking|checking\s+with|consulting)\s+(?:the\s+user|me|the\s+owner)\b)",
        )
        .with_context(r"{{directive}}|{{addressee}}|{{topics}}")
        .with_unless(r"{{negator_en}}"),
        PatternRule::new(
            "may_proceed_without_confirmation",
            r"\b(?:can|may|should|will|is\s+allowed\s+to|are\s+allowed\s+to)\s+(?:now\s+|also\s+|just\s+|simply\s+)?(?:be\s+)?(?:[a-z]+(?:ed|en)|made|done|sent|paid|wired|run|go\s+(?:through|ahead)|proceed|happen)\b(?:{{s}}){0,30}?\bwithout\s+(?:(?:first\s+)?(?:asking|requesting|requiring|needing|waiting|getting|seeking)\s+(?:for\s+)?)?(?:[\w'’-]+\s+){0,3}?(?:{{confirm}})|\b(?:is|are)\s+(?:now\s+|also\s+)?(?:fine|ok|okay|acceptable|allowed|permitted)\s+without\s+(?:[\w'’-]+\s+){0,3}?(?:{{confirm}})",
        )
        .with_context(stakes)
        .with_unless(r"{{negator_en}}"),
        PatternRule::new(
            "blanket_preapproval",
            r"\b(?:is|are)\s+(?:now\s+|always\s+|already\s+|hereby\s+)*(?:pre-?approved|pre-?authori[sz]ed|auto(?:matically)?[-\s]?approved|implicitly\s+approved|approved\s+in\s+advance|(?:approved|authori[sz]ed|confirmed)\s+automatically)\b|\b(?:has|have)\s+(?:already\s+)?(?:pre-?)?(?:approved|authori[sz]ed|confirmed|consented\s+to)\s+(?:all|every|any)\s+(?:future\s+)?",
        )
        .with_context(r"{{directive}}|{{addressee}}|\bthe\s+user\b"),
        PatternRule::new(
            "no_longer_requires_confirmation_zh",
            r"不再(?:需要|需|要求|必须|用|要|进行|做|经过)(?:{{zs}}){0,12}?(?:{{confirm_zh}})|(?:{{confirm_zh}})(?:环节|步骤|流程|要求)?(?:已经|已)?(?:不再|不)(?:需要|必要|必须|是必须的|要求)",
        )
        .with_context(stakes),
        PatternRule::new(
            "confirmation_not_needed_zh",
            r"(?:不需要|不需|无需|无须|不用|不必|用不着|没必要|免去|免除|省去|省略|可以省略|可以跳过|可跳过)再?(?:进行|经过|做|等|等待|征得|征求|得到|获得)?(?:{{zs}}){0,10}?(?:{{confirm_zh}})|(?:{{confirm_zh}})(?:环节|步骤|流程)?(?:可以|可)?(?:省略|跳过|取消|免去|省去)",
        )
        .with_context(stakes),
        PatternRule::new(
            "skip_confirmation_zh",
            r"(?:跳过|绕过|绕开|省掉|略过|免掉|取消|去掉|去除|关闭|关掉|停用|禁用|撤销|解除)(?:掉)?[^。！？；!?\n需要必得了]{0,8}?(?:{{confirm_zh}})",
        )
        .with_context(stakes),
        PatternRule::new(
            "do_not_ask_for_confirmation_zh",
            r"(?:不要|别|不用|不必|无需|不需要)再?(?:问|询问|请求|征求|等待|等|要求)(?:我|用户|对方|他们?)?(?:的)?(?:{{confirm_zh}}|意见)",
        )
        .with_context(stakes),
        // A security control switched off for good or for every case, in any order of words: verb
        // then control, control then "off", or the control said to be off.
        PatternRule::new(
            "switch_off_control",
            r"(?:{{disabling}})\s+(?:{{control_modifiers}})(?:{{control}})|\b(?:turn|switch|shut|leave|keep|set)\s+(?:the\s+|my\s+|our\s+|your\s+|all\s+)?(?:{{control}})\s+off\b|(?:{{control}})\s+(?:(?:can|should|must|will|may|shall)\s+(?:now\s+)?be|is|are|gets?|stays?)\s+(?:now\s+)?(?:disabled|switched\s+off|turned\s+off|deactivated|removed|skipped|bypassed|waived|optional|off|dropped|suspended)\b|\bno\s+(?:longer\s+)?(?:need|needs|have|has)\s+(?:to\s+(?:pass|go\s+through|complete|do|use|enter|provide|ask\s+for)\s+|for\s+)(?:{{control_modifiers}})(?:{{control}})",
        )
        .with_context(r"{{standing_scope}}|{{addressee}}"),
        // A standing order to act (approve, pay, ship, release…) without the check that guards
        // the act: phrased as an order (at the start of a clause, after a label such as
        // "Preference:", or to the agent with a modal), never as someone's account of a habit.
        PatternRule::new(
            "act_without_check",
            r"(?:^|[.!?;:\n]\s*|\b(?:from\s+now\s+on|going\s+forward|henceforth|by\s+default)\s*,?\s+|\b(?:you|the\s+(?:assistant|agent|bot|ai|model))\s+(?:should|must|can|may|will|shall|need\s+to|are\s+(?:allowed|free|authori[sz]ed|expected)\s+to)\s+)(?:(?:please|just|simply|always|now|then|also|instantly|automatically)\s+)*(?:{{unchecked_act}})\b(?:{{s}}){0,60}?\b(?:without|with\s+no|skipping|bypassing)\s+(?:(?:any|a|an|the|first|even|second|extra|additional|final|manual|prior|human|their|its)\s+)*(?:{{checking}})",
        )
        .with_context(r"{{standing_scope}}"),
        PatternRule::new(
            "switch_off_control_zh",
            r"(?:关闭|关掉|停用|禁用|取消|去掉|去除|跳过|绕过|绕开|省略|省掉|省去|免去|免除|撤销|解除|停掉)(?:掉)?[^。！？；!?\n需要必得了]{0,8}?(?:{{control_zh}})|(?:不用|不必|不需要|无需|无须|不再|别再?|不要再|用不着)(?:再)?(?:走|做|进行|经过|使用|用|开启|去)?(?:{{control_zh}}|核对|核实|确认|验证|审批|审核|复核|校验)|(?:{{control_zh}})(?:{{zs}}){0,8}?(?:关闭|关掉|停用|禁用|取消|去掉|停掉|撤销|免去|省略|跳过)",
        )
        .with_context(r"{{standing_scope_zh}}|{{addressee}}"),
        PatternRule::new(
            "blanket_preapproval_zh",
            r"(?:默认|自动|提前|预先)(?:同意|批准|确认|通过|授权)|(?:已经?|早已)(?:同意|批准|授权)了?(?:所有|全部|一切|任何|以后的?)",
        )
        .with_context(r"{{directive}}|{{addressee}}"),
    ]
}

pub(crate) fn safety_rules() -> Vec<PatternRule> {
    let policy =
        r"{{topics}}|\b(?:polic(?:y|ies)|rules?|regulations?|compliance)\b|规定|政策|制度|规则";
    vec![
        PatternRule::new(
            "requires_confirmation",
            r"\b(?:requires?|required|requiring|must|needs?|needed|has\s+to|have\s+to|should|shall|(?:is|are)\s+subject\s+to)\b(?:{{s}}){0,50}?(?:{{confirm}})|(?:{{confirm}})(?:{{s}}){0,40}?\b(?:is|are)\s+(?:always\s+)?(?:required|mandatory|needed|necessary)\b",
        )
        .with_context(policy),
        PatternRule::new(
            "never_without_confirmation",
            r"\b(?:never|do\s+not|don['’]?t|must\s+not|mustn['’]?t|should\s+not|shouldn['’]?t|cannot|can['’]?t|may\s+not)\b(?:{{s}}){0,50}?\b(?:without|before|unless|until)\b(?:{{s}}){0,40}?(?:{{confirm}}|\bask\w*|\bcheck\w*\s+with)|\b(?:never|do\s+not|don['’]?t|must\s+not|mustn['’]?t|should\s+not|shouldn['’]?t|cannot|can['’]?t|may\s+not)\s+(?:[\w'’-]+\s+){0,2}?(?:skip|bypass|omit|waive|forgo|ignore|disable|remove)\w*\s+(?:{{s}}){0,30}?(?:{{confirm}})",
        )
        .with_context(policy),
        PatternRule::new(
            "requires_confirmation_zh",
            r"(?:必须|需要|须|需|应当|应该|要求|一律|务必|一定要|一定得|都要|要先|需先|须经|需经|应经)(?:{{zs}}){0,20}?(?:{{confirm_zh}})",
        )
        .with_context(policy),
        PatternRule::new(
            "never_without_confirmation_zh",
            r"(?:未经|没有|不经过?|除非|在未|没有经过?)(?:{{zs}}){0,12}?(?:{{confirm_zh}})(?:{{zs}}){0,12}?(?:不得|不能|不可|禁止|不要|不许|不准|之前不)|(?:{{negator_zh}})再?(?:跳过|省略|省去|绕过|取消|关闭|免去)(?:{{zs}}){0,10}?(?:{{confirm_zh}})",
        )
        .with_context(policy),
    ]
}

pub(crate) fn sensitive_topics() -> BTreeMap<String, Vec<String>> {
    let topic = |name: &str, terms: &str| {
        let terms = terms.split(',').map(|t| t.trim().to_string()).collect();
        (name.to_string(), terms)
    };
    BTreeMap::from([
        topic(
            "payments",
            "transfer*, payment*, pay, pays, paying, paid, payout*, wire, wired, wiring money, remit*, \
             refund*, withdraw*, purchase*, transaction*, bank account*, money, invoice*, buy, buying, \
             bought, spend, spending, checkout, 转账, 付款, 汇款, 支付, 打款, 转钱, 汇钱, 提现, 退款, 收款",
        ),
        topic(
            "credentials",
            "password*, passcode*, passphrase*, passwd, api key*, access key*, secret key*, \
             private key*, ssh key*, token*, credential*, pin code*, 2fa code*, recovery code*, \
             seed phrase*, 密码, 口令, 密钥, 私钥, 令牌, 验证码, 凭证, 凭据",
        ),
        topic(
            "permissions",
            "admin right*, admin access, admin privilege*, administrator*, grant access, grants access, \
             granting access, granted access, access right*, sudo, root access, permission*, \
             privilege*, 权限, 管理员, 提权",
        ),
        topic(
            "deletion",
            "delet*, wipe*, wiping, erase*, erasing, purge*, purging, drop table*, drop database, \
             truncate table, rm -rf, 删除, 删掉, 清空, 抹掉, 销毁, 格式化, 清除",
        ),
    ])
}
